"""A person's rules (core_memory.persons, R-3.4): named by the API, per organisation."""
import pytest

from audit.models import AuditEvent
from core_memory.persons.models import Person
from memory.models import MemoryRecord
from tests.factories import erasure_receipt, make_record

pytestmark = pytest.mark.django_db


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

    assert response.status_code == 200
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


@pytest.mark.parametrize("subject", ["team/anna", "anna@example.org", "anna ?#%"])
def test_any_person_the_api_can_name_can_be_erased_and_given_rules(tenant, subject):
    """R-3.4, R-2.2: a person named in X-Core-Subject, slash and all, is reachable at
    /v1/persons/{subject} with the subject percent-encoded."""
    from urllib.parse import quote

    make_record(tenant.index, "Likes tea.", subject=subject)
    path = f"/v1/persons/{quote(subject, safe='')}"

    assert tenant.client().patch(path, {"helper_model_may_read": False}, format="json").json() == {
        "subject": subject,
        "helper_model_may_read": False,
    }
    response = tenant.client().delete(path)

    assert response.status_code == 200
    # The rules' `person.updated` event named her: scrubbed.
    assert response.json() == {"subject": subject, "erased": erasure_receipt(records=1, audit_events_scrubbed=1)}
    assert not MemoryRecord.objects.filter(subject=subject).exists()


def test_erasing_needs_management_and_memory_rules_need_memory(tenant, state):
    """R-2.7: PATCH needs `memory`, DELETE needs `management`; a denial writes nothing."""
    make_record(tenant.index, "Anna likes tea.", subject="anna")
    memory_client, _ = tenant.key_client(capabilities=("knowledge", "memory"))
    management_client, _ = tenant.key_client(capabilities=("management",))
    before = state()

    assert memory_client.delete("/v1/persons/anna").status_code == 403
    assert management_client.patch("/v1/persons/anna", {"helper_model_may_read": False}, format="json").status_code == 403
    assert state() == before
    assert MemoryRecord.objects.count() == 1


@pytest.mark.parametrize(("method", "body"), [("patch", {"helper_model_may_read": False}), ("delete", None)])
def test_a_request_for_one_person_cannot_change_or_erase_another(tenant, method, body):
    """R-2.2, R-12.1: with `X-Core-Subject: anna` a key changed bob's rules or erased carl."""
    make_record(tenant.index, "Carl's feit", subject="carl")
    Person.objects.create(organisation=tenant.organisation, subject="carl")
    events = AuditEvent.objects.count()

    response = getattr(tenant.client(subject="anna"), method)("/v1/persons/carl", body, format="json")

    assert (response.status_code, response.json()["error"]["param"]) == (403, "X-Core-Subject")
    assert Person.objects.get(subject="carl").helper_model_may_read is True
    assert MemoryRecord.objects.filter(subject="carl").count() == 1
    assert AuditEvent.objects.count() == events


def test_a_request_for_a_person_may_set_her_own_rules(tenant):
    """R-2.2, R-3.4."""
    response = tenant.client(subject="anna").patch("/v1/persons/anna", {"helper_model_may_read": False}, format="json")

    assert response.status_code == 200
    assert Person.objects.get(subject="anna").helper_model_may_read is False


def test_a_request_for_one_person_cannot_export_another(tenant):
    """R-2.2, R-12.1 (found by the isolation matrix): with `X-Core-Subject: bob`,
    `GET /v1/persons/anna/export` answered everything Core holds about anna."""
    make_record(tenant.index, "Anna's geheim", subject="anna")

    response = tenant.client(subject="bob").get("/v1/persons/anna/export")

    assert (response.status_code, response.json()["error"]["param"]) == (403, "X-Core-Subject")
    assert "geheim" not in response.content.decode()
