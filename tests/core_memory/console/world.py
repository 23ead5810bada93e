"""A console with something on every page: records of every type and kind of version, a
contested pair, persons with and without rules, a thread whose turn injected, skipped and
searched, an extraction switch, a proposal, store and key settings, audit events. The language
and browser tests walk it."""
from __future__ import annotations

import json
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from core_memory.base.callers import Caller
from core_memory.keys.services import subject_token_create
from core_memory.persons.services import person_update
from core_memory.threads.models import Response
from maintenance.models import Proposal, ProposalSource
from memory.models import MemoryRecord
from memory.services.changes import record_delete_by_administrator, record_update_by_administrator
from memory.services.contradictions import records_contradiction_mark_within
from memory.services.writes import record_write
from core_memory.webhooks.delivery import webhook_delivery_run
from core_memory.webhooks.models import WebhookDelivery, WebhookSubscription
from core_memory.webhooks.services import webhook_secret_new
from tests.factories import client_for, make_key, resolved_for
from tests.factories import with_draft


@dataclass
class World:
    tenant: object
    key: object
    coffee: object
    tea: object
    moved: object
    old: object
    thread_id: str
    response_id: str
    proposal: object


def contest(first: MemoryRecord, second: MemoryRecord) -> None:
    """Maintenance marks a contradiction (R-9.2): both contested, pointing at each other, each with a version."""
    with transaction.atomic():
        records_contradiction_mark_within(caller=Caller.system(organisation_id=first.organisation_id, actor="maintenance"), pairs=[(first.pk, second.pk)])


def propose(index, records: list[MemoryRecord]) -> Proposal:
    """A pending proposal resting on `records`, made as maintenance's promotion makes one (R-9.4)."""
    first = records[0]
    proposal = Proposal.objects.create(
        organisation_id=index.organisation_id, index=index, type=first.type, text=first.text, confidence=first.confidence,
        reason=Proposal.Reason.SEVERAL_PERSONS, created_at=timezone.now(),
    )
    ProposalSource.objects.bulk_create(ProposalSource(record=record, proposal=proposal) for record in records)
    return proposal


def build_world(tenant, fake_model) -> World:
    key, secret = make_key(
        tenant.organisation,
        name="assistent",
        memory={
            "write_tool": True,
            "injection": {"enabled": True, "index_id": tenant.index.id, "token_budget": 120},
            "decay": {"half_life_days": {"preference": 30}},
        },
    )
    index = resolved_for(key, tenant.index)
    # Told of every record written below; one delivery tried (refused: the address is loopback).
    WebhookSubscription.objects.create(
        organisation=tenant.organisation, url="http://127.0.0.1:9/hooks", events=["record.created"], secret=webhook_secret_new()
    )

    def write(text, **fields):
        fields.setdefault("subject", "anna")
        return record_write(index=index, **with_draft(key=key, actor=key.id, type=fields.pop("type", "fact"), text=text, **fields)).record

    coffee = write("Anna drinkt koffie zwart", type="preference", metadata={"bron": "gesprek"})
    tea = write("Anna drinkt alleen thee", type="preference")
    contest(coffee, tea)
    write("anna drinkt koffie zwart.", type="preference")  # a confirmation
    old = write("Anna woont in Delft")
    moved = write("Anna woont in Utrecht", replaces=old.id)
    anna = Caller.console(organisation_id=tenant.organisation.id, actor="console:anna")
    record_update_by_administrator(caller=anna, record_id=moved.id, changes={"confidence": 0.8, "metadata": {"wijk": "oost"}})
    webhook_delivery_run(delivery_id=WebhookDelivery.objects.for_organisation(tenant.organisation.id).order_by("id").first().id)
    write("Offerte sturen aan Acme", type="commitment")
    write("Antwoord altijd in het Nederlands", type="behaviour")
    write("Het kantoor sluit om zes uur", subject=None)
    gone = write("Een vergissing", subject="bert")
    record_delete_by_administrator(caller=anna, record_id=gone.id)
    MemoryRecord.objects.create(
        organisation_id=tenant.organisation.id, index=tenant.index, subject="anna", type="episode", text="Anna plande haar verhuizing.",
        normalised_text="anna plande haar verhuizing.", source="extraction", changed_at=coffee.changed_at,
        structured={"thread_id": "thr_x", "result": "succeeded"},
    )
    MemoryRecord.objects.create(
        organisation_id=tenant.organisation.id, index=tenant.index, subject="anna", type="lesson", text="Vraag eerst naar de datum.",
        normalised_text="vraag eerst naar de datum.", source="maintenance", trusted=False, changed_at=coffee.changed_at,
    )
    write("x" * 300, subject="anna", confidence=0.99)  # too long for the key's budget: skipped
    person_update(caller=Caller.system(organisation_id=tenant.organisation.id, actor="test"), organisation=tenant.organisation, subject="anna", helper_model_may_read=False)
    subject_token_create(caller=Caller(key=key, subject="carla"), ttl_seconds=600)

    bram = write("Declaraties gaan voor de 25e naar financiën.", subject="bram")
    anna_too = write("Declaraties gaan voor de 25e naar financiën.")
    proposal = propose(tenant.index, [bram, anna_too])

    switched = client_for(secret).put(f"/v1/memory/stores/{tenant.index.id}/extraction", {"enabled": True, "model": "fake-chat"}, format="json")
    assert switched.status_code == 200, switched.json()

    tool = f"memory__{tenant.index.id}__search"
    fake_model.reply(tool_calls=[("call_1", tool, {"query": "koffie"})])
    fake_model.reply("Anna drinkt haar koffie zwart.")
    body = client_for(secret).post(
        "/v1/responses",
        {"model": "fake-chat", "input": "Hoe drinkt Anna koffie?", "user": "anna", "tools": [{"type": "tool", "name": tool}]},
        format="json",
    ).json()
    assert body["status"] == "completed", json.dumps(body)
    return World(
        tenant=tenant, key=key, coffee=coffee, tea=tea, moved=moved, old=old, thread_id=body["thread_id"], response_id=body["id"],
        proposal=proposal,
    )


def response_of(world: World) -> Response:
    return Response.objects.unscoped().get(pk=world.response_id)
