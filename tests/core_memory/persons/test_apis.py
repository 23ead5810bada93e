import pytest
from django.utils import timezone

from audit.models import AuditEvent
from core_memory.flows.erasure import person_erase
from core_memory.keys.models import SubjectToken
from core_memory.persons.models import Person
from memory.models import MemoryRecord

pytestmark = pytest.mark.django_db


def make_record(tenant, *, subject, text):
    return MemoryRecord.objects.create(
        organisation=tenant.organisation,
        index=tenant.index,
        subject=subject,
        type="fact",
        text=text,
        normalised_text=text.lower(),
        changed_at=timezone.now(),
    )


def test_patch_sets_a_persons_rules_and_names_her(tenant):
    """R-3.4: persons exist once named; `helper_model_may_read` defaults to true."""
    response = tenant.client().patch("/v1/persons/anna", {"helper_model_may_read": False}, format="json")

    assert response.status_code == 200
    assert response.json() == {"subject": "anna", "helper_model_may_read": False}
    person = Person.objects.get(organisation=tenant.organisation, subject="anna")
    assert person.helper_model_may_read is False
    assert AuditEvent.objects.filter(action="person.updated", target="anna").count() == 1


def test_an_empty_patch_names_her_with_the_default_rules(tenant):
    """R-3.4."""
    response = tenant.client().patch("/v1/persons/anna", {}, format="json")

    assert response.json() == {"subject": "anna", "helper_model_may_read": True}
    assert not AuditEvent.objects.filter(action="person.updated").exists()


def test_the_same_subject_in_two_organisations_is_two_persons(tenant, other_tenant):
    """R-12.1."""
    tenant.client().patch("/v1/persons/anna", {"helper_model_may_read": False}, format="json")
    other_tenant.client().patch("/v1/persons/anna", {}, format="json")

    rules = dict(Person.objects.filter(subject="anna").values_list("organisation_id", "helper_model_may_read"))
    assert rules == {tenant.organisation.id: False, other_tenant.organisation.id: True}


def test_a_non_boolean_rule_is_a_400(tenant):
    """R-2.3."""
    response = tenant.client().patch("/v1/persons/anna", {"helper_model_may_read": "maybe"}, format="json")

    assert response.status_code == 400
    assert response.json()["error"]["param"] == "helper_model_may_read"
    assert not Person.objects.exists()


def test_erasing_a_person_removes_her_records_tokens_and_rules_only(tenant, other_tenant):
    """R-3.4: her records go, shared ones and other persons' stay; audited as person.erased (R-11.2)."""
    make_record(tenant, subject="anna", text="Anna likes tea.")
    make_record(tenant, subject="anna", text="Anna lives in Utrecht.")
    kept = [
        make_record(tenant, subject="bert", text="Bert likes coffee."),
        make_record(tenant, subject=None, text="The office opens at nine."),
        make_record(other_tenant, subject="anna", text="Another organisation's Anna."),
    ]
    tenant.client().patch("/v1/persons/anna", {"helper_model_may_read": False}, format="json")
    tenant.client().post("/v1/subject-tokens", {"subject": "anna"}, format="json")

    answer = person_erase(organisation=tenant.organisation, subject="anna", actor=tenant.key.id)

    assert answer == {"subject": "anna", "erased": {"records": 2, "subject_tokens": 1}}
    assert set(MemoryRecord.objects.values_list("id", flat=True)) == {record.id for record in kept}
    assert not Person.objects.filter(organisation=tenant.organisation, subject="anna").exists()
    assert not SubjectToken.objects.exists()
    event = AuditEvent.objects.get(action="person.erased")
    assert (event.organisation_id, event.actor, event.target) == (tenant.organisation.id, tenant.key.id, "anna")


def test_delete_person_route_erases_her(tenant):
    """R-3.4: `DELETE /v1/persons/{subject}` erases her records and answers what was erased."""
    make_record(tenant, subject="anna", text="Anna likes tea.")
    shared = make_record(tenant, subject=None, text="The office opens at nine.")
    tenant.client().post("/v1/subject-tokens", {"subject": "anna"}, format="json")

    response = tenant.client().delete("/v1/persons/anna")

    assert response.status_code == 200
    assert response.json() == {"subject": "anna", "erased": {"records": 1, "subject_tokens": 1}}
    assert list(MemoryRecord.objects.values_list("id", flat=True)) == [shared.id]
    assert AuditEvent.objects.filter(action="person.erased", target="anna", actor=tenant.key.id).count() == 1


@pytest.mark.parametrize("subject", ["team/anna", "anna@example.org", "anna ?#%"])
def test_any_person_the_api_can_name_can_be_erased_and_given_rules(tenant, subject):
    """R-3.4, R-2.2: a person named in X-Core-Subject, slash and all, is reachable at
    /v1/persons/{subject} with the subject percent-encoded."""
    from urllib.parse import quote

    make_record(tenant, subject=subject, text="Likes tea.")
    path = f"/v1/persons/{quote(subject, safe='')}"

    assert tenant.client().patch(path, {"helper_model_may_read": False}, format="json").json() == {
        "subject": subject,
        "helper_model_may_read": False,
    }
    response = tenant.client().delete(path)

    assert response.status_code == 200
    assert response.json()["erased"]["records"] == 1
    assert not MemoryRecord.objects.filter(subject=subject).exists()


def test_erasing_a_person_never_named_is_not_an_error(tenant):
    """R-3.4: afterwards she is gone either way."""
    response = tenant.client().delete("/v1/persons/nobody")

    assert response.status_code == 200
    assert response.json()["erased"] == {"records": 0, "subject_tokens": 0}


def test_erasing_needs_management_and_memory_rules_need_memory(tenant, state):
    """R-2.7: PATCH needs `memory`, DELETE needs `management`; a denial writes nothing."""
    make_record(tenant, subject="anna", text="Anna likes tea.")
    memory_client, _ = tenant.key_client(capabilities=("knowledge", "memory"))
    management_client, _ = tenant.key_client(capabilities=("management",))
    before = state()

    assert memory_client.delete("/v1/persons/anna").status_code == 403
    assert management_client.patch("/v1/persons/anna", {"helper_model_may_read": False}, format="json").status_code == 403
    assert state() == before
    assert MemoryRecord.objects.count() == 1
