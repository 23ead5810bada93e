"""`GET /v1/persons/{subject}/export` and `core_memory.flows.export` (issue 14, GDPR access and
portability): everything Core holds about her, one documented JSON document, audited."""
from __future__ import annotations

import pytest

from audit.models import AuditEvent
from core_memory.flows.export import PERSON_EXPORT_PARTS, person_export_document
from core_memory.base.callers import Caller
from core_memory.keys.services import subject_token_create
from core_memory.persons.services import person_update
from core_memory.threads.services import ItemDraft, thread_create, thread_items_append
from maintenance.models import Proposal, ProposalSource
from memory.services.changes import record_delete
from memory.services.writes import RecordDraft, record_write
from tests.factories import make_record

pytestmark = pytest.mark.django_db


@pytest.fixture
def anna(tenant, write):
    """Anna's memory: a corrected fact, a deleted one, an episode, a lesson, a thread, a token, rules;
    Bob's and a shared record beside it."""
    first = write("Woont in Delft.", subject="anna")
    corrected = record_write(
                             caller=Caller(key=tenant.key, subject="anna", actor="test"),
                             index=tenant.index,
                             draft=RecordDraft(
                                 type="fact",
                                 text="Woont in Utrecht.",
                                 replaces=first.id,
                             ),
                         ).record
    gone = write("Houdt van jazz.", type="preference", subject="anna")
    record_delete(caller=Caller(key=tenant.key, subject="anna", actor="test"), record_id=gone.id)
    episode = make_record(tenant.index, "Anna wilde haar factuur; opgelost.", type="episode", subject="anna")
    lesson = make_record(tenant.index, "Eerst het klantnummer vragen.", type="lesson", subject="anna")
    bobs = write("Woont in Gouda.", subject="bob")
    write("Acme sluit om vijf uur.")
    proposal = Proposal.objects.create(
        organisation=tenant.organisation, index=tenant.index, type="fact", text="Woont in Utrecht.", reason="several_persons", created_at=bobs.created_at
    )
    ProposalSource.objects.bulk_create([ProposalSource(record=corrected, proposal=proposal), ProposalSource(record=bobs, proposal=proposal)])
    person_update(caller=Caller.system(organisation_id=tenant.organisation.id, actor="test"), organisation=tenant.organisation, subject="anna", helper_model_may_read=False)
    thread = thread_create(caller=Caller(key=tenant.key, subject="anna"), metadata={"kanaal": "chat"})
    thread_items_append(thread=thread, caller=Caller(key=tenant.key), drafts=[ItemDraft(role="user", content="Hallo")])
    token, _ = subject_token_create(caller=Caller(key=tenant.key, subject="anna"), ttl_seconds=600)
    return {
        "first": first, "corrected": corrected, "gone": gone, "episode": episode, "lesson": lesson, "thread": thread, "token": token,
        "proposal": proposal,
    }


def test_the_export_holds_everything_about_her_and_nothing_of_anyone_else(tenant, anna):
    response = tenant.client().get("/v1/persons/anna/export")

    assert response.status_code == 200
    document = response.json()
    assert {name: document[name] for name in ("format", "version", "organisation_id", "subject")} == {
        "format": "core-geheugen.person-export", "version": 1, "organisation_id": tenant.organisation.id, "subject": "anna"
    }
    assert set(document) == {"format", "version", "exported_at", "organisation_id", "subject", *PERSON_EXPORT_PARTS}
    assert document["person"]["helper_model_may_read"] is False
    assert [(record["id"], record["status"]) for record in document["records"]] == [
        (anna["first"].id, "ended"), (anna["corrected"].id, "active"), (anna["gone"].id, "deleted")
    ]
    assert [record["id"] for record in document["episodes"]] == [anna["episode"].id]
    assert [record["id"] for record in document["lessons"]] == [anna["lesson"].id]
    corrected = document["records"][1]
    assert corrected["replaces"] == anna["first"].id
    assert corrected["provenance"] == {"thread_id": None, "item_ids": [], "response_id": None}
    assert [(version["change"], version["actor"], version["text"]) for version in document["records"][0]["history"]] == [
        ("created", "test", "Woont in Delft."), ("ended", "test", "Woont in Delft.")
    ]
    assert [version["change"] for version in document["records"][2]["history"]] == ["created", "deleted"]
    assert [(thread["id"], [item["content"] for item in thread["items"]]) for thread in document["threads"]] == [(anna["thread"].id, ["Hallo"])]
    assert [token["id"] for token in document["subject_tokens"]] == [anna["token"].id]
    assert "secret" not in str(document["subject_tokens"])
    assert [(proposal["id"], proposal["status"], proposal["record_ids"]) for proposal in document["proposals"]] == [
        (anna["proposal"].id, "pending", [anna["corrected"].id])
    ]
    text = response.content.decode()
    assert "Gouda" not in text and "Acme sluit" not in text


def test_the_export_is_audited_with_what_it_held(tenant, anna):
    tenant.client().get("/v1/persons/anna/export")

    event = AuditEvent.objects.get(action="person.exported")
    assert (event.actor, event.target, event.details) == (
        tenant.key.id, "anna", {"records": 3, "episodes": 1, "lessons": 1, "threads": 1, "subject_tokens": 1, "proposals": 1}
    )


def test_a_person_never_named_exports_empty_parts(tenant):
    document = person_export_document(caller=Caller.console(organisation_id=tenant.organisation.id, actor="console:admin", subject="nobody"))

    assert document["person"] is None
    assert [document[name] for name in ("records", "episodes", "lessons", "threads", "subject_tokens", "proposals")] == [[], [], [], [], [], []]


@pytest.mark.parametrize(("who", "status"), [("memory_key", 403), ("subject_token", 403), ("anonymous", 401)])
def test_only_management_exports_and_a_denial_writes_nothing(tenant, anna, anonymous, who, status):
    """R-2.7: like erasing her, exporting her needs `management`; a subject token never has it."""
    from tests.factories import client_for

    _, token_secret = subject_token_create(caller=Caller(key=tenant.key, subject="anna"), ttl_seconds=600)
    clients = {
        "memory_key": lambda: tenant.key_client(capabilities=["knowledge", "memory"])[0],
        "subject_token": lambda: client_for(token_secret),
        "anonymous": lambda: anonymous,
    }
    client = clients[who]()
    before = AuditEvent.objects.count()

    response = client.get("/v1/persons/anna/export")

    assert response.status_code == status
    assert AuditEvent.objects.count() == before


def test_another_organisation_sees_nothing_of_her(tenant, other_tenant, anna):
    """R-12.1: the same name in another organisation is another person."""
    document = other_tenant.client().get("/v1/persons/anna/export").json()

    assert document["organisation_id"] == other_tenant.organisation.id
    assert [document[name] for name in ("records", "episodes", "lessons", "threads", "subject_tokens", "proposals")] == [[], [], [], [], [], []]
    assert document["person"] is None
