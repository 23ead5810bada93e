"""Bad input to the record routes is a 4xx naming the field, never a 500 or a partial write (R-12.3).

PostgreSQL refuses NUL characters and lone surrogates in text and jsonb, `Infinity`
in jsonb, and timestamps it cannot hand back to Python; each must be caught before
the database sees it.
"""
import base64

import pytest

from audit.models import AuditEvent
from core_memory.base.errors import InvalidRequest
from core_memory.base.callers import Caller
from memory.models import MemoryRecord
from memory.services.changes import record_update
from memory.services.writes import record_write
from tests.factories import with_draft

pytestmark = pytest.mark.django_db

# Raw JSON bodies: a test client would not encode a lone surrogate or an infinity itself.
UNSTORABLE_METADATA = [
    ('{"klant": "ac\\u0000me"}', "metadata.klant"),
    ('{"kl\\u0000ant": "acme"}', "metadata"),
    ('{"klant": {"naam": ["acme", "bo\\u0000lt"]}}', "metadata.klant.naam[1]"),
    ('{"klant": "\\ud800"}', "metadata.klant"),
    ('{"score": 1e999}', "metadata.score"),
    ('{"scores": [1, -1e999]}', "metadata.scores[1]"),
    pytest.param('{"diep": %s1%s}' % ("[" * 900, "]" * 900), "metadata.diep" + "[0]" * 32, id="nested-900-deep"),
]
# Valid ISO 8601 with an offset, but outside the years PostgreSQL hands back to Python.
UNREADABLE_TIMES = ["9999-12-31T23:00:00-14:00", "0001-01-01T00:00:00+14:00"]


def _state():
    return sorted(MemoryRecord.objects.values_list("id", "text", "metadata", "due_at")), MemoryRecord.history.count()


@pytest.mark.parametrize("metadata, param", UNSTORABLE_METADATA)
def test_a_write_with_unstorable_metadata_is_a_400_naming_the_value(tenant, metadata, param):
    """R-12.3."""
    body = '{"index_id": "%s", "type": "fact", "text": "Acme", "metadata": %s}' % (tenant.index.id, metadata)

    response = tenant.client().post("/v1/memory", body, content_type="application/json")

    assert response.status_code == 400
    assert response.json()["error"]["param"] == param
    assert not MemoryRecord.objects.exists()


@pytest.mark.parametrize("metadata, param", UNSTORABLE_METADATA)
def test_a_patch_with_unstorable_metadata_is_a_400_and_changes_nothing(tenant, write, metadata, param):
    """R-12.3."""
    record = write("Acme", metadata={"klant": "acme"})
    before = _state()

    response = tenant.client().patch(f"/v1/memory/{record.id}", '{"metadata": %s}' % metadata, content_type="application/json")

    assert response.status_code == 400
    assert response.json()["error"]["param"] == param
    assert _state() == before
    assert not AuditEvent.objects.filter(action="memory.updated").exists()


@pytest.mark.parametrize("due_at", UNREADABLE_TIMES)
def test_a_due_date_outside_the_readable_years_is_a_400(tenant, due_at):
    """R-12.3: stored, it would make every later read of the list fail."""
    response = tenant.client().post(
        "/v1/memory", {"index_id": tenant.index.id, "type": "commitment", "text": "Offerte", "due_at": due_at}, format="json"
    )

    assert response.status_code == 400
    assert response.json()["error"]["param"] == "due_at"
    assert not MemoryRecord.objects.exists()
    assert tenant.client().get(f"/v1/memory?index_id={tenant.index.id}").status_code == 200


@pytest.mark.parametrize("due_at", UNREADABLE_TIMES)
def test_a_patch_to_a_due_date_outside_the_readable_years_is_a_400(tenant, write, due_at):
    record = write("Offerte", type="commitment")
    before = _state()

    response = tenant.client().patch(f"/v1/memory/{record.id}", {"due_at": due_at}, format="json")

    assert response.status_code == 400
    assert response.json()["error"]["param"] == "due_at"
    assert _state() == before


@pytest.mark.parametrize("position", [b"abc", b"-1x", b"\x00"])
def test_a_history_cursor_that_is_no_version_number_is_a_400(tenant, write, position):
    """R-12.3: a tampered cursor names the cursor."""
    record = write("Acme")
    cursor = base64.b64encode(b"p=" + position).decode()

    response = tenant.client().get(f"/v1/memory/{record.id}/history", {"cursor": cursor})

    assert response.status_code == 400
    assert response.json()["error"]["param"] == "cursor"


def test_a_history_cursor_from_a_page_still_leads_to_the_next(tenant, write):
    record = write("Acme")
    write("acme.")
    first = tenant.client().get(f"/v1/memory/{record.id}/history", {"limit": 1}).json()

    second = tenant.client().get(f"/v1/memory/{record.id}/history", {"limit": 1, "cursor": first["next_cursor"]})

    assert [version["change"] for version in first["data"] + second.json()["data"]] == ["confirmed", "created"]


@pytest.mark.parametrize("fields, param", [
    ({"text": "Acme\x00"}, "text"),
    ({"text": "Acme", "metadata": {"klant": "\x00"}}, "metadata.klant"),
])
def test_the_write_service_refuses_unstorable_text_for_every_caller(tenant, fields, param):
    """The write tool and extraction pass a model's words straight to the service (R-12.3)."""
    with pytest.raises(InvalidRequest) as refused:
        record_write(caller=Caller(key=tenant.key, subject=None, actor="test"), index=tenant.index, **with_draft(type="fact", **fields))

    assert refused.value.param == param
    assert not MemoryRecord.objects.exists()


def test_the_update_service_refuses_unstorable_text(tenant, write):
    record = write("Acme")
    with pytest.raises(InvalidRequest) as refused:
        record_update(caller=Caller(key=tenant.key, subject=None, actor="test"), record_id=record.pk, changes={"text": "Ac\x00me"})
    assert refused.value.param == "text"
    assert MemoryRecord.objects.get(pk=record.pk).text == "Acme"


OVERSIZED_METADATA = [
    pytest.param({"notitie": "x" * 1_000_000}, id="one-megabyte-value"),
    pytest.param({f"k{number}": number for number in range(20_000)}, id="twenty-thousand-keys"),
    pytest.param({f"k{number}": number for number in range(101)}, id="101-keys"),
    pytest.param({"notitie": "x" * 16_385}, id="just-over-16-KiB"),
]


@pytest.mark.parametrize("metadata", OVERSIZED_METADATA)
def test_metadata_is_bounded_like_text_on_a_write(tenant, metadata):
    """R-12.3: 1 MB values or 20,000 keys were accepted (text is capped at 20,000 characters)."""
    response = tenant.client().post("/v1/memory", {"index_id": tenant.index.id, "type": "fact", "text": "Acme", "metadata": metadata}, format="json")

    assert (response.status_code, response.json()["error"]["param"]) == (400, "metadata")
    assert not MemoryRecord.objects.exists()


@pytest.mark.parametrize("metadata", OVERSIZED_METADATA)
def test_metadata_is_bounded_on_a_patch_and_on_a_thread(tenant, write, metadata):
    """R-12.3."""
    record = write("Acme")
    before = _state()

    patched = tenant.client().patch(f"/v1/memory/{record.id}", {"metadata": metadata}, format="json")
    thread = tenant.client().post("/v1/threads", {"metadata": metadata}, format="json")

    assert (patched.status_code, patched.json()["error"]["param"]) == (400, "metadata")
    assert (thread.status_code, thread.json()["error"]["param"]) == (400, "metadata")
    assert _state() == before


def test_metadata_within_the_bounds_is_kept(tenant):
    metadata = {f"k{number}": "x" * 100 for number in range(100)}

    response = tenant.client().post("/v1/memory", {"index_id": tenant.index.id, "type": "fact", "text": "Acme", "metadata": metadata}, format="json")

    assert response.status_code == 201
    assert MemoryRecord.objects.get().metadata == metadata
