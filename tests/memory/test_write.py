import pytest

from audit.models import AuditEvent
from memory.models import MemoryRecord

pytestmark = pytest.mark.django_db


def _post(client, index, **body):
    return client.post("/v1/memory", {"index_id": index.id, **body}, format="json")


def test_write_creates_a_record_of_the_requests_person_and_answers_201(tenant):
    """R-5.1, R-5.5: the answer is the write JSON with status created."""
    response = _post(tenant.client(subject="anna"), tenant.index, type="preference", text="Drinkt thee zonder suiker", confidence=0.8)

    assert response.status_code == 201
    body = response.json()
    assert set(body) == {"memory_id", "status", "type", "text", "confidence", "subject", "index_id", "created_at"}
    assert body["memory_id"].startswith("mem_")
    assert (body["status"], body["type"], body["subject"], body["index_id"], body["confidence"]) == (
        "created", "preference", "anna", tenant.index.id, 0.8,
    )
    record = MemoryRecord.objects.get(pk=body["memory_id"])
    assert (record.subject, record.source, record.trusted, record.confirmations) == ("anna", "api", True, 0)
    assert record.provenance == {"thread_id": None, "item_ids": [], "response_id": None}


def test_write_without_a_person_is_shared(tenant):
    """R-5.1: no person named → a shared record."""
    response = _post(tenant.client(), tenant.index, type="fact", text="Kantoor sluit om 17:00")

    assert response.status_code == 201
    assert response.json()["subject"] is None
    assert MemoryRecord.objects.get(pk=response.json()["memory_id"]).subject is None


def test_confidence_defaults_to_one(tenant):
    """R-5.1."""
    response = _post(tenant.client(), tenant.index, type="fact", text="x")
    assert response.json()["confidence"] == 1.0


@pytest.mark.parametrize("type_name", ["episode", "lesson"])
def test_core_written_types_are_refused_with_422(tenant, type_name):
    """R-5.3: episode (and lesson) are written only by Core."""
    response = _post(tenant.client(), tenant.index, type=type_name, text="a session")

    assert response.status_code == 422
    assert response.json()["error"]["param"] == "type"
    assert not MemoryRecord.objects.exists()


def test_unknown_type_is_a_422_listing_the_allowed_types(tenant):
    """R-5.3."""
    response = _post(tenant.client(), tenant.index, type="recipe", text="pannenkoeken")

    assert response.status_code == 422
    assert response.json()["error"] == {
        "type": "invalid_request_error",
        "message": "Unknown type 'recipe'. Allowed types: fact, preference, commitment, behaviour.",
        "param": "type",
    }
    assert not MemoryRecord.objects.exists()


def test_the_same_text_folded_confirms_the_record_with_200(tenant):
    """R-5.4: case, whitespace and final punctuation are folded; count and time rise."""
    client = tenant.client(subject="anna")
    first = _post(client, tenant.index, type="preference", text="Houdt van  koffie")
    second = _post(client, tenant.index, type="preference", text="houdt van koffie!")

    assert second.status_code == 200
    assert second.json()["status"] == "confirmed"
    assert second.json()["memory_id"] == first.json()["memory_id"]
    record = MemoryRecord.objects.get()
    assert record.confirmations == 1
    assert record.last_confirmed_at is not None
    assert record.changed_at == record.last_confirmed_at


def test_the_same_text_of_another_person_or_type_is_a_new_record(tenant):
    """R-5.4: confirmation is per index, person and type."""
    _post(tenant.client(subject="anna"), tenant.index, type="preference", text="koffie")
    other_person = _post(tenant.client(subject="bram"), tenant.index, type="preference", text="koffie")
    other_type = _post(tenant.client(subject="anna"), tenant.index, type="fact", text="koffie")
    shared = _post(tenant.client(), tenant.index, type="preference", text="koffie")

    assert [other_person.status_code, other_type.status_code, shared.status_code] == [201, 201, 201]
    assert MemoryRecord.objects.count() == 4


def test_shared_records_are_confirmed_too(tenant):
    """R-5.4 for records without a person."""
    _post(tenant.client(), tenant.index, type="fact", text="Kantoor in Utrecht")
    again = _post(tenant.client(), tenant.index, type="fact", text="kantoor in utrecht.")

    assert again.status_code == 200
    assert MemoryRecord.objects.get().confirmations == 1


def test_a_correction_ends_the_old_record_and_answers_corrected(tenant):
    """R-5.4, R-5.5: 201 "corrected"; the old one is ended and points at the new one."""
    client = tenant.client(subject="anna")
    old = _post(client, tenant.index, type="fact", text="Woont in Delft").json()["memory_id"]
    response = _post(client, tenant.index, type="fact", text="Woont in Leiden", replaces=old)

    assert response.status_code == 201
    assert response.json()["status"] == "corrected"
    new = response.json()["memory_id"]
    ended = MemoryRecord.objects.get(pk=old)
    assert (ended.status, ended.replaced_by_id) == ("ended", new)
    assert MemoryRecord.objects.get(pk=new).replaces_id == old


def test_correcting_an_ended_record_is_a_409_and_writes_nothing(tenant):
    client = tenant.client()
    old = _post(client, tenant.index, type="fact", text="a").json()["memory_id"]
    _post(client, tenant.index, type="fact", text="b", replaces=old)

    response = _post(client, tenant.index, type="fact", text="c", replaces=old)

    assert response.status_code == 409
    assert response.json()["error"]["param"] == "replaces"
    assert not MemoryRecord.objects.filter(text="c").exists()


def test_a_person_cannot_correct_another_persons_record(tenant):
    """R-5.8's scoping holds for corrections: another's record is a 404."""
    old = _post(tenant.client(subject="anna"), tenant.index, type="fact", text="a").json()["memory_id"]

    response = _post(tenant.client(subject="bram"), tenant.index, type="fact", text="b", replaces=old)

    assert response.status_code == 404
    assert response.json()["error"]["param"] == "replaces"
    assert MemoryRecord.objects.get(pk=old).status == "active"
    assert not MemoryRecord.objects.filter(text="b").exists()


def test_due_at_is_only_for_commitments(tenant):
    """R-5.1."""
    fact = _post(tenant.client(), tenant.index, type="fact", text="x", due_at="2026-12-01T09:00:00+01:00")
    commitment = _post(tenant.client(), tenant.index, type="commitment", text="Offerte sturen", due_at="2026-12-01T09:00:00+01:00")

    assert fact.status_code == 400
    assert fact.json()["error"]["param"] == "due_at"
    assert commitment.status_code == 201
    assert MemoryRecord.objects.get().type == "commitment"


def test_due_at_without_an_offset_is_a_400(tenant):
    """R-2.4."""
    response = _post(tenant.client(), tenant.index, type="commitment", text="x", due_at="2026-12-01T09:00:00")
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "due_at"


@pytest.mark.parametrize("body, param", [
    ({"type": "fact", "text": "x", "confidence": 1.5}, "confidence"),
    ({"type": "fact", "text": "x", "colour": "red"}, "colour"),
    ({"type": "fact"}, "text"),
])
def test_invalid_write_is_a_400_naming_the_field(tenant, body, param):
    """R-2.3."""
    response = _post(tenant.client(), tenant.index, **body)
    assert response.status_code == 400
    assert response.json()["error"]["param"] == param
    assert not MemoryRecord.objects.exists()


def test_idempotent_retry_of_a_write_does_not_confirm(tenant):
    """R-2.6: a retry is the first answer, not a confirmation."""
    client = tenant.client()
    first = client.post("/v1/memory", {"index_id": tenant.index.id, "type": "fact", "text": "x"}, format="json", HTTP_IDEMPOTENCY_KEY="k1")
    again = client.post("/v1/memory", {"index_id": tenant.index.id, "type": "fact", "text": "x"}, format="json", HTTP_IDEMPOTENCY_KEY="k1")

    assert again.status_code == 201
    assert again.json() == first.json()
    assert MemoryRecord.objects.get().confirmations == 0


def test_write_denied_is_audited_in_the_organisation(tenant):
    """R-5.2: audit `memory.write_denied`."""
    client, key = tenant.key_client(write=())
    response = _post(client, tenant.index, type="fact", text="x")

    assert response.status_code == 403
    event = AuditEvent.objects.get(action="memory.write_denied")
    assert (event.organisation_id, event.actor, event.target) == (tenant.organisation.id, key.id, tenant.index.id)


def test_a_correction_whose_text_another_record_already_has_confirms_that_one(tenant, write):
    """R-5.4: the old record ends, pointing at the active record that already says it."""
    already = write("Woont in Leiden", subject="anna")
    old = write("Woont in Delft", subject="anna")

    response = _post(tenant.client(subject="anna"), tenant.index, type="fact", text="woont in Leiden.", replaces=old.id)

    assert response.status_code == 200
    assert (response.json()["status"], response.json()["memory_id"]) == ("confirmed", already.id)
    old.refresh_from_db()
    assert (old.status, old.replaced_by_id) == ("ended", already.id)
    assert MemoryRecord.objects.count() == 2


def test_a_correction_may_keep_the_same_text(tenant, write):
    """The corrected record ends first, so the same words make the new record."""
    old = write("Woont in Delft", subject="anna")
    response = _post(tenant.client(subject="anna"), tenant.index, type="fact", text="Woont in Delft", replaces=old.id, confidence=0.5)

    assert (response.status_code, response.json()["status"]) == (201, "corrected")
    assert MemoryRecord.objects.get(status="active").confidence == 0.5


def test_a_blank_text_is_a_400(tenant):
    response = _post(tenant.client(), tenant.index, type="fact", text="   ")
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "text"
    assert not MemoryRecord.objects.exists()


def test_a_correction_without_a_person_stays_with_the_corrected_records_person(tenant):
    """R-5.4 with R-12.1: correcting Anna's record from an organisation-level request keeps it hers,
    rather than turning her fact into a shared record that reaches every colleague's turns."""
    old = _post(tenant.client(subject="anna"), tenant.index, type="fact", text="Woont in Delft").json()["memory_id"]

    response = _post(tenant.client(), tenant.index, type="fact", text="Woont in Leiden", replaces=old)

    assert response.status_code == 201
    assert response.json()["subject"] == "anna"
    assert MemoryRecord.objects.get(pk=response.json()["memory_id"]).subject == "anna"
