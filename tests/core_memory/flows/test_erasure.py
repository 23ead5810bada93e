"""Erasing a person (core_memory.flows.erasure, R-3.4): her records and every version of them,
her subject tokens, the real values behind her threads' placeholders and her rules are gone
for good; what others hold stays."""
import pytest

from audit.models import AuditEvent
from core_memory.flows.erasure import person_erase
from core_memory.keys.models import SubjectToken
from core_memory.persons.models import Person
from core_memory.pii.models import ThreadPlaceholders
from core_memory.pii.services import thread_texts_redact
from core_memory.threads.models import Thread
from core_memory.threads.services import thread_create
from extraction.models import ExtractionRun, ExtractionWindow
from extraction.services.planning import extraction_switch_plan
from memory.models import MemoryRecord
from memory.services import person_records_erase
from tests.extraction.builders import conversation, switch_put
from tests.factories import erasure_receipt as receipt
from tests.factories import make_record

pytestmark = pytest.mark.django_db


def test_erasing_a_person_removes_her_records_and_their_history_only(tenant, other_tenant, write):
    old = write("Woont in Delft", subject="anna")
    new = write("Woont in Leiden", subject="anna", replaces=old.id)
    write("woont in leiden", subject="anna")
    shared = write("Kantoor in Utrecht")
    brams = write("Woont in Delft", subject="bram")
    elsewhere = MemoryRecord.objects.create(
        organisation=other_tenant.organisation, index=other_tenant.index, subject="anna", type="fact", text="x",
        normalised_text="x", changed_at=new.changed_at,
    )

    removed = person_records_erase(organisation=tenant.organisation, subject="anna")

    assert removed == {"records": 2, "episodes": 0, "lessons": 0}
    assert set(MemoryRecord.objects.values_list("id", flat=True)) == {shared.id, brams.id, elsewhere.id}
    assert not MemoryRecord.history.filter(id__in=[old.id, new.id]).exists()
    assert MemoryRecord.history.filter(id=shared.id).count() == 1
    assert MemoryRecord.history.filter(subject="anna", organisation_id=other_tenant.organisation.id).count() == 1


def test_a_shared_record_that_corrected_hers_loses_only_the_pointer(tenant, write):
    annas = write("Drinkt thee", subject="anna")
    # A shared record pointing at hers: written before corrections kept the person (set up directly).
    correction = write("Drinkt koffie")
    MemoryRecord.objects.filter(pk=correction.pk).update(replaces=annas)

    person_records_erase(organisation=tenant.organisation.id, subject="anna")

    correction.refresh_from_db()
    assert correction.replaces_id is None
    assert correction.status == "active"


def test_erasing_a_person_removes_her_records_tokens_and_rules_only(tenant, other_tenant):
    """R-3.4: her records go, shared ones and other persons' stay; audited as person.erased (R-11.2)."""
    make_record(tenant.index, "Anna likes tea.", subject="anna")
    make_record(tenant.index, "Anna lives in Utrecht.", subject="anna")
    kept = [
        make_record(tenant.index, "Bert likes coffee.", subject="bert"),
        make_record(tenant.index, "The office opens at nine.", subject=None),
        make_record(other_tenant.index, "Another organisation's Anna.", subject="anna"),
    ]
    tenant.client().patch("/v1/persons/anna", {"helper_model_may_read": False}, format="json")
    tenant.client().post("/v1/subject-tokens", {"subject": "anna"}, format="json")

    answer = person_erase(organisation=tenant.organisation, subject="anna", actor=tenant.key.id)

    assert answer == {"subject": "anna", "erased": receipt(records=2, subject_tokens=1)}
    assert set(MemoryRecord.objects.values_list("id", flat=True)) == {record.id for record in kept}
    assert not Person.objects.filter(organisation=tenant.organisation, subject="anna").exists()
    assert not SubjectToken.objects.exists()
    event = AuditEvent.objects.get(action="person.erased")
    assert (event.organisation_id, event.actor, event.target) == (tenant.organisation.id, tenant.key.id, "anna")


def test_delete_person_route_erases_her(tenant):
    """R-3.4: `DELETE /v1/persons/{subject}` erases her records and answers what was erased."""
    make_record(tenant.index, "Anna likes tea.", subject="anna")
    shared = make_record(tenant.index, "The office opens at nine.", subject=None)
    tenant.client().post("/v1/subject-tokens", {"subject": "anna"}, format="json")

    response = tenant.client().delete("/v1/persons/anna")

    assert response.status_code == 200
    assert response.json() == {"subject": "anna", "erased": receipt(records=1, subject_tokens=1)}
    assert list(MemoryRecord.objects.values_list("id", flat=True)) == [shared.id]
    assert AuditEvent.objects.filter(action="person.erased", target="anna", actor=tenant.key.id).count() == 1


def test_erasing_a_person_never_named_is_not_an_error(tenant):
    """R-3.4: afterwards she is gone either way."""
    response = tenant.client().delete("/v1/persons/nobody")

    assert response.status_code == 200
    assert response.json() == {"subject": "nobody", "erased": receipt()}


def test_erasing_a_person_removes_the_real_values_behind_her_threads_placeholders(tenant):
    """R-3.4, R-8.8: the placeholders hold her e-mail and phone number in clear; counted in the receipt."""
    hers = [thread_create(organisation=tenant.organisation, key=tenant.key, subject="anna") for _ in range(2)]
    brams = thread_create(organisation=tenant.organisation, key=tenant.key, subject="bram")
    for thread in (*hers, brams):
        thread_texts_redact(thread=thread, texts=["Mail anna@example.nl of bel 06-12345678"])

    answer = person_erase(organisation=tenant.organisation, subject="anna", actor=tenant.key.id)

    assert answer == {"subject": "anna", "erased": receipt(threads=2, thread_placeholders=2)}
    assert list(ThreadPlaceholders.objects.values_list("thread_id", flat=True)) == [brams.id]
    assert AuditEvent.objects.get(action="person.erased").details == receipt(threads=2, thread_placeholders=2)


def test_erasing_a_person_removes_her_threads_with_their_extraction_windows(tenant, fake_model):
    """R-3.4: her threads go with their windows (both counted in the receipt); a run waiting for
    her window no longer does, and nothing of hers is read again."""
    switch_put(tenant.client(), tenant.index.id)
    conversation(organisation=tenant.organisation, key=tenant.key, messages=["Ik heet Anna."])
    bert, _ = conversation(organisation=tenant.organisation, key=tenant.key, subject="bert", messages=["Ik heet Bert."])
    extraction_switch_plan(index_id=tenant.index.id)

    answer = person_erase(organisation=tenant.organisation, subject="anna", actor=tenant.key.id)

    assert answer["erased"] == receipt(threads=1, extraction_windows=1)
    assert list(ExtractionWindow.objects.values_list("thread_id", flat=True)) == [bert.id]
    assert list(Thread.objects.values_list("id", flat=True)) == [bert.id]
    assert ExtractionRun.objects.get().pending == 1
    assert extraction_switch_plan(index_id=tenant.index.id, force=True).window_ids == []
