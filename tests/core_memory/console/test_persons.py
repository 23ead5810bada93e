"""Persons in the console (core_memory.console.persons, issue 13 item 3, R-3.4, R-10.2): the list, her
page as injection sees her, her rules, and erasing her — scoped, audited, through the services."""
from __future__ import annotations

import pytest
from django.contrib.admin.utils import quote
from django.test import Client

from audit.models import AuditEvent
from audit.services import person_commitment
from core_memory.base.callers import Caller
from core_memory.keys.models import SubjectToken
from core_memory.keys.services import subject_token_create
from core_memory.persons.models import Person
from core_memory.persons.services import person_update
from core_memory.threads.services import thread_create
from memory.models import MemoryRecord
from tests.factories import console_client, erasure_receipt, staff_without_organisation

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_password_hashing")]

PERSONS = "/console/persons/person/"


def person_url(tenant, subject: str, page: str = "") -> str:
    return f"{PERSONS}{tenant.organisation.id}/{quote(subject)}/{page + '/' if page else ''}"


def reads(page: str):
    return AuditEvent.objects.filter(action="memory.console_read", details__page=page).order_by("id")


def test_the_list_names_everyone_core_knows_with_records_per_type_threads_activity_and_rules(console, tenant, other_tenant, write):
    """A person is named by a record, a thread or stored rules (R-3.4); another organisation's never shows."""
    write("Anna drinkt koffie", subject="anna")
    write("Anna houdt van jazz", subject="anna", type="preference")
    write("Anna houdt van blues", subject="anna", type="preference")
    thread_create(caller=Caller(key=tenant.key, subject="bert"))
    person_update(caller=Caller.system(organisation_id=tenant.organisation.id, actor="test"), organisation=tenant.organisation, subject="carla", helper_model_may_read=False)
    write("Gedeeld feit")
    person_update(caller=Caller.system(organisation_id=other_tenant.organisation.id, actor="test"), organisation=other_tenant.organisation, subject="dirk", helper_model_may_read=False)

    response = console.get(PERSONS)

    rows = {row["person"].subject: row for row in response.context["rows"]}
    assert list(rows) == ["anna", "bert", "carla"]
    assert rows["anna"]["types"] == [("feit", 1), ("voorkeur", 2)]
    assert (rows["anna"]["person"].threads, rows["bert"]["person"].threads) == (0, 1)
    assert rows["anna"]["person"].last_activity_at is not None
    assert (rows["carla"]["person"].helper_model_may_read, rows["carla"]["person"].has_rules) == (False, True)
    assert "dirk" not in response.content.decode()
    (event,) = reads("persons")
    assert (event.organisation_id, event.actor, event.details["subjects"]) == (tenant.organisation.id, "console:anna", ["anna", "bert", "carla"])


def test_the_list_searches_and_pages(console, tenant, write, monkeypatch):
    monkeypatch.setattr("core_memory.console.persons.PERSONS_PER_PAGE", 2)
    for subject in ("ada", "anna", "annabel", "bert"):
        write(f"{subject} bestaat", subject=subject)

    first = console.get(PERSONS, {"q": "ann"}).context
    assert [row["person"].subject for row in first["rows"]] == ["anna", "annabel"]
    assert first["next_page"] is None
    paged = console.get(PERSONS, {"p": "2"}).context
    assert [row["person"].subject for row in paged["rows"]] == ["annabel", "bert"]
    assert (paged["previous_page"], paged["next_page"]) == (1, None)


def test_her_page_shows_her_records_by_section_in_injection_order_her_threads_and_rules(console, tenant, write):
    """R-7.5 sections; R-7.7 order; episodes and lessons apart; the read names every record shown (R-10.2)."""
    promise = write("Offerte sturen", subject="anna", type="commitment")
    rule = write("Antwoord kort", subject="anna", type="behaviour")
    strong = write("Anna woont in Utrecht", subject="anna", confidence=0.9)
    weak = write("Anna houdt van jazz", subject="anna", type="preference", confidence=0.4)
    write("Iets gedeelds")
    write("Bert zijn feit", subject="bert")
    thread = thread_create(caller=Caller(key=tenant.key, subject="anna"))

    response = console.get(person_url(tenant, "anna"))

    assert response.status_code == 200
    sections = {section["name"]: [record.id for record in section["records"]] for section in response.context["sections"]}
    assert sections == {
        "commitments": [promise.id], "behaviour": [rule.id], "about_this_person": [strong.id, weak.id], "lessons": [], "past_sessions": []
    }
    assert [entry["thread"].id for entry in response.context["threads"]] == [thread.id]
    assert response.context["rules_form"].initial == {"helper_model_may_read": True}
    (event,) = reads("person")
    assert (event.target, sorted(event.details["record_ids"])) == ("anna", sorted([promise.id, rule.id, strong.id, weak.id]))
    assert event.details["thread_ids"] == [thread.id]


def test_her_rules_change_through_the_person_service_and_are_audited(console, tenant):
    """R-3.4."""
    response = console.post(person_url(tenant, "anna", "rules"), {})

    assert response.status_code == 302
    assert Person.objects.get(organisation=tenant.organisation, subject="anna").helper_model_may_read is False
    event = AuditEvent.objects.get(action="person.updated")
    assert (event.actor, event.target, event.details) == ("console:anna", "anna", {"fields": ["helper_model_may_read"]})


def test_erasing_her_shows_what_will_go_then_erases_through_the_flow_and_gives_a_receipt(console, tenant, write):
    """R-3.4, R-9.7, R-11.2: the counts first, then everything of hers gone, audited, with the receipt."""
    write("Anna drinkt koffie", subject="anna")
    old = write("Anna woont in Delft", subject="anna")
    write("Anna woont in Utrecht", subject="anna", replaces=old.id)
    write("Anna houdt van jazz", subject="anna", type="preference")
    kept = write("Bert blijft", subject="bert")
    subject_token_create(caller=Caller(key=tenant.key, subject="anna"), ttl_seconds=600)

    confirmation = console.get(person_url(tenant, "anna", "erase"))

    assert confirmation.context["preview"] == {
        "subject": "anna", "records_per_type": {"fact": 3, "preference": 1}, "proposals": 0, "threads": 0, "subject_tokens": 1,
        "thread_placeholders": 0, "extraction_windows": 0, "maintenance_jobs": 0, "webhook_events": 0, "rules": True, "console_actions": 0,
        "idempotent_answers": 0, "audit_events_scrubbed": 0,
    }
    shown = confirmation.content.decode()
    # The console speaks Dutch to this administrator.
    for words in ("0 bewaarde API-antwoorden op herhaalde verzoeken", "0 regels in het actielogboek", "0 auditgebeurtenissen waarvan de details"):
        assert words in shown
    assert MemoryRecord.objects.filter(subject="anna").count() == 4
    assert reads("erase").get().details["counts"]["subject_tokens"] == 1

    receipt = console.post(person_url(tenant, "anna", "erase"))

    assert receipt.status_code == 200
    # The erase page's own read named her: it is scrubbed with her.
    assert receipt.context["receipt"] == {"subject": "anna", "erased": erasure_receipt(records=4, subject_tokens=1, audit_events_scrubbed=1)}
    assert ("auditgebeurtenissen gewist van de details van deze persoon", 1) in [(str(label), count) for label, count in receipt.context["receipt_rows"]]
    assert not MemoryRecord.objects.filter(subject="anna").exists()
    assert not SubjectToken.objects.filter(subject="anna").exists()
    assert MemoryRecord.objects.filter(pk=kept.pk).exists()
    event = AuditEvent.objects.get(action="person.erased")
    assert (event.actor, event.target) == ("console:anna", person_commitment(caller=Caller.system(organisation_id=event.organisation_id, actor="test"), subject="anna"))


@pytest.mark.parametrize("page", ["", "erase"])
def test_another_organisations_person_is_a_404_and_nothing_is_read_or_written(console, other_tenant, page):
    """R-2.5, R-12.1."""
    person_update(caller=Caller.system(organisation_id=other_tenant.organisation.id, actor="test"), organisation=other_tenant.organisation, subject="dirk", helper_model_may_read=False)
    events = AuditEvent.objects.count()

    shown = console.get(person_url(other_tenant, "dirk", page))
    erased = console.post(person_url(other_tenant, "dirk", "erase"))
    ruled = console.post(person_url(other_tenant, "dirk", "rules"), {"helper_model_may_read": "on"})

    assert (shown.status_code, erased.status_code, ruled.status_code) == (404, 404, 404)
    assert Person.objects.get(subject="dirk").helper_model_may_read is False
    assert AuditEvent.objects.count() == events


@pytest.mark.parametrize(
    ("who", "status"),
    [
        (lambda: Client(), 302),  # to the login page
        (lambda: console_client(staff_without_organisation(with_permissions=True)), 403),
    ],
)
@pytest.mark.parametrize("page", ["list", "person", "erase"])
def test_who_administers_nothing_reads_and_erases_nothing(tenant, write, who, status, page):
    write("Anna drinkt koffie", subject="anna")
    url = PERSONS if page == "list" else person_url(tenant, "anna", "" if page == "person" else "erase")

    client = who()
    response = client.get(url)
    erased = client.post(person_url(tenant, "anna", "erase"))

    assert (response.status_code, erased.status_code) == (status, status)
    assert "Anna drinkt koffie" not in response.content.decode()
    assert MemoryRecord.objects.filter(subject="anna").count() == 1
    assert not AuditEvent.objects.filter(action__in=["memory.console_read", "person.erased"]).exists()


def test_a_superuser_sees_every_organisations_persons_with_their_organisation(superuser, tenant, other_tenant, write):
    write("Anna drinkt koffie", subject="anna")
    person_update(caller=Caller.system(organisation_id=other_tenant.organisation.id, actor="test"), organisation=other_tenant.organisation, subject="anna", helper_model_may_read=False)

    response = console_client(superuser).get(PERSONS)

    assert sorted((row["person"].organisation_id, row["person"].subject) for row in response.context["rows"]) == sorted(
        [(tenant.organisation.id, "anna"), (other_tenant.organisation.id, "anna")]
    )
    assert console_client(superuser).get(person_url(other_tenant, "anna")).status_code == 200


def test_exporting_her_gives_the_apis_document_as_a_file_audited_both_ways(console, tenant, write):
    """Issue 13 item 3 with issue 14's document: the same JSON as `GET /v1/persons/{subject}/export`."""
    coffee = write("Anna drinkt koffie", subject="anna")
    write("Bert blijft", subject="bert")

    response = console.get(person_url(tenant, "anna", "export"))

    assert response.status_code == 200
    assert response["Content-Disposition"] == f'attachment; filename="core-geheugen-{tenant.organisation.id}-anna.json"'
    document = response.json()
    from_the_api = tenant.client().get("/v1/persons/anna/export").json()
    assert {name: value for name, value in document.items() if name != "exported_at"} == {
        name: value for name, value in from_the_api.items() if name != "exported_at"
    }
    assert [record["id"] for record in document["records"]] == [coffee.id]
    exported = AuditEvent.objects.filter(action="person.exported", target="anna").order_by("id").first()
    assert exported.actor == "console:anna"
    read = reads("export").get()
    assert (read.target, read.details["record_ids"]) == ("anna", [coffee.id])


def test_another_organisations_person_cannot_be_exported(console, other_tenant):
    person_update(caller=Caller.system(organisation_id=other_tenant.organisation.id, actor="test"), organisation=other_tenant.organisation, subject="dirk", helper_model_may_read=False)
    events = AuditEvent.objects.count()

    assert console.get(person_url(other_tenant, "dirk", "export")).status_code == 404
    assert AuditEvent.objects.count() == events


def test_the_erase_page_of_a_person_never_named_says_there_is_nothing_to_erase(console, tenant, write):
    """As the API's erasure of a person never named (a 200 that erases nothing): a plain statement,
    no counts of zero and nothing to confirm; someone known still gets the counts."""
    write("Anna drinkt koffie", subject="anna")

    unknown = console.get(person_url(tenant, "nobody-at-all", "erase"))
    known = console.get(person_url(tenant, "anna", "erase")).content.decode()

    assert unknown.status_code == 200
    page = unknown.content.decode()
    assert "Core bewaart niets over nobody-at-all" in page and "Niets te wissen over nobody-at-all" in page
    assert 'id="erase-counts"' not in page and 'type="submit" value="Ja' not in page
    assert 'id="erase-counts"' in known and 'id="erase-nothing"' not in known
