"""The isolation matrix (R-12.1, R-2.5, R-2.7, R-4.2, R-5.2; issue 11).

Every route the URL resolver knows is called, with every method it answers, by every
attacker below, against one victim organisation whose data carries canary strings:

- `other_organisation`: another organisation's owner key (every capability, every index);
- `policy_without_index`: a key of the victim's organisation whose policy names another index;
- `read_only` / `write_only`: keys whose policy names the victim's index for one right only;
- `without_capability`: a key of the organisation with no capability at all;
- `token_of_bob`: a subject token for another person (bob) of a key with every right;
- `header_bob`: a key with every right, sending `X-Core-Subject: bob`;
- `without_threads`: a key with every capability but `threads` (which reads every conversation),
  whose policy names every index: it may continue and read back only the threads its key started;
- `revoked`: a revoked key of the organisation; `anonymous`: no credential.

Each call asserts the exact status, that no canary of what the attacker may not see is in
the body, and that nothing it may not change changed; a refusal (4xx) wrote nothing at all
but the `memory.write_denied` audit event R-5.2 asks for. The owner's own call (`owner`)
proves each request reaches its route. A route or method without an entry in ROUTES fails
`test_every_route_is_in_the_matrix`, so a new route cannot be missed.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest
from django.db import connection, transaction
from django.urls import URLPattern, URLResolver, get_resolver

from core_memory.agents.models import Agent
from core_memory.base.callers import Caller
from core_memory.keys.models import ApiKey
from core_memory.keys.services import key_revoke, subject_token_create
from core_memory.organisations.models import Organisation
from core_memory.persons.models import Person
from core_memory.threads.models import Item, Thread
from core_memory.webhooks.models import WebhookSubscription
from maintenance.models import Proposal, ProposalSource
from memory.models import MemoryRecord
from memory.services.writes import RecordDraft, record_write
from stores.models import KnowledgeIndex, MemoryStore
from tests.factories import client_for, make_index, make_key
from tests.fake_model import FakeChatModel, completion
from tests.narrow import owner_turn_that_read_a1

pytestmark = pytest.mark.django_db

ATTACKERS = (
    "owner",
    "other_organisation",
    "policy_without_index",
    "read_only",
    "write_only",
    "without_capability",
    "token_of_bob",
    "header_bob",
    "without_threads",
    "revoked",
    "anonymous",
)

# What each attacker may neither see (canaries) nor change (state), by asset: `anna` (her
# records and rules), `anna_thread` (her conversation: its items and turns), `records` (the victim index's records), `index` (that index
# and its store), `keys`, `audit`, `organisation` (its settings), `agents`, `switch` (the
# index's extraction switch and connector), `structure` (indexes and stores as a whole), `webhooks`
# (the organisation's subscriptions).
ALL_ASSETS = ("anna", "anna_thread", "records", "index", "keys", "audit", "organisation", "agents", "switch", "structure", "webhooks")
FORBIDDEN = {
    "owner": (),
    "other_organisation": ALL_ASSETS,
    "revoked": ALL_ASSETS,
    "anonymous": ALL_ASSETS,
    "policy_without_index": ("records", "index", "switch"),
    "read_only": (),
    "write_only": (),
    "without_capability": ("anna", "anna_thread", "records", "index", "keys", "audit", "organisation", "switch", "structure", "webhooks"),
    "token_of_bob": ("anna", "anna_thread", "keys", "audit", "organisation", "webhooks"),
    "header_bob": ("anna", "anna_thread"),
    # Issue 28: `thread_id` on POST /v1/responses continued another key's thread without `threads`.
    "without_threads": ("anna_thread",),
}
# Assets an attacker may change but not read: the records of an index a key may only write.
UNREADABLE = {"write_only": ("records",)}
# Assets an attacker may read but not change.
UNCHANGEABLE = {"read_only": ("records", "index", "switch"), "token_of_bob": ("structure", "agents")}
# The management routes are the organisation's administration: a key with `management` reads
# and erases across every index, whatever its policy names.
ORGANISATION_WIDE = {
    "policy_without_index": ("anna", "anna_thread", "records", "index", "switch"),
    "read_only": ("records",),
    "write_only": ("anna", "anna_thread", "records", "switch"),
    # A person's export and erasure are the organisation's, her conversations included.
    "without_threads": ("anna_thread",),
}


@dataclass
class World:
    ids: dict
    clients: dict
    canaries: dict = field(default_factory=dict)
    model: FakeChatModel | None = None

    def path(self, template: str) -> str:
        return template.format(**self.ids)


def _client(secret, subject=None):
    return client_for(secret, subject=subject)


@pytest.fixture
def world(tenant, other_tenant, settings):
    """The victim organisation, its data marked with canaries, and one client per attacker."""
    model = FakeChatModel().start()
    settings.CORE_MODELS = [model.config("fake-chat")]
    # The matrix's new subscription points at a closed port on loopback.
    settings.CORE_WEBHOOKS_ALLOW_PRIVATE_NETWORKS = True
    organisation = tenant.organisation
    Organisation.objects.filter(pk=organisation.pk).update(name="cnry-organisation-name")
    KnowledgeIndex.objects.filter(pk=tenant.index.pk).update(name="cnry-index-name")
    index = tenant.index
    elsewhere = make_index(organisation, name="cnry-elsewhere")
    anna_fact = record_write(caller=Caller(key=tenant.key, subject="anna", actor="test"), index=index, draft=RecordDraft(type="fact", text="cnry-anna-fact")).record
    shared_fact = record_write(caller=Caller(key=tenant.key, subject=None, actor="test"), index=index, draft=RecordDraft(type="fact", text="cnry-shared-fact")).record
    bob_fact = record_write(caller=Caller(key=tenant.key, subject="bob", actor="test"), index=index, draft=RecordDraft(type="fact", text="Bob likes tea")).record
    owner = tenant.client()
    thread = owner.post("/v1/threads", {"subject": "anna", "metadata": {"note": "cnry-anna-thread"}}, format="json").json()
    owner.post(f"/v1/threads/{thread['id']}/items", {"items": [{"role": "user", "content": "cnry-anna-said"}]}, format="json")
    agent = owner.post("/v1/agents", {"name": "desk", "model": "fake-chat", "instructions": "cnry-agent-instructions"}, format="json").json()
    switch = owner.put(
        f"/v1/memory/stores/{index.id}/extraction",
        {"enabled": True, "model": "fake-chat", "instructions": "cnry-switch-instructions"},
        format="json",
    ).json()
    named_key, _secret = make_key(organisation, name="cnry-key-name")
    owner.patch("/v1/persons/anna", {"helper_model_may_read": False}, format="json")
    anna_token, _token_secret = subject_token_create(caller=Caller(key=tenant.key, subject="anna"), ttl_seconds=600)
    anna_turn = owner.post("/v1/responses", {"model": "fake-chat", "input": "cnry-anna-asked", "user": "anna"}, format="json").json()
    proposal = Proposal.objects.create(
        organisation=organisation, index=index, type="fact", text="cnry-anna-fact", reason="general_knowledge", created_at=anna_fact.created_at
    )
    ProposalSource.objects.create(record=anna_fact, proposal=proposal)
    webhook = WebhookSubscription.objects.create(
        organisation=organisation, url="https://cnry-webhook.example/hooks", events=["proposal.created"], secret="whsec_" + "A" * 44
    )

    full = {"name": "attacker"}
    _policy_client, _k = tenant.key_client(read=(elsewhere.id,), write=(elsewhere.id,), **full)
    _read_client, _k = tenant.key_client(read=(index.id,), write=(), **full)
    _write_client, _k = tenant.key_client(read=(), write=(index.id,), **full)
    _bare_client, _k = tenant.key_client(capabilities=(), **full)
    bob_key, _bob_key_secret = make_key(organisation, name="attacker")
    _bob_token, bob_token_secret = subject_token_create(caller=Caller(key=bob_key, subject="bob"), ttl_seconds=600)
    revoked_key, revoked_secret = make_key(organisation, name="attacker")
    key_revoke(caller=Caller.system(organisation_id=revoked_key.organisation_id, actor="test"), key_id=revoked_key.id)
    header_key, header_secret = make_key(organisation, name="attacker")
    _threadless_client, _k = tenant.key_client(capabilities=("knowledge", "memory", "management", "trust_envelope"), **full)
    clients = {
        "owner": owner,
        "other_organisation": other_tenant.client(),
        "policy_without_index": _policy_client,
        "read_only": _read_client,
        "write_only": _write_client,
        "without_capability": _bare_client,
        "token_of_bob": _client(bob_token_secret),
        "header_bob": _client(header_secret, subject="bob"),
        "without_threads": _threadless_client,
        "revoked": _client(revoked_secret),
        "anonymous": _client(None),
    }
    ids = {
        "org": organisation.id,
        "idx": index.id,
        "elsewhere": elsewhere.id,
        "anna_record": anna_fact.id,
        "shared_record": shared_fact.id,
        "bob_record": bob_fact.id,
        "thread": thread["id"],
        "agent": agent["id"],
        "connector": switch["connector_id"],
        "named_key": named_key.id,
        "other_org": other_tenant.organisation.id,
        "proposal": proposal.id,
        "response": anna_turn["id"],
        "webhook": webhook.id,
    }
    canaries = {
        "anna": ("cnry-anna-fact", anna_fact.id, anna_token.id),
        "anna_thread": ("cnry-anna-said", "cnry-anna-thread", thread["id"], "cnry-anna-asked", anna_turn["id"]),
        "records": ("cnry-anna-fact", "cnry-shared-fact", "Bob likes tea", anna_fact.id, shared_fact.id, bob_fact.id),
        "index": ("cnry-index-name", index.id),
        "keys": ("cnry-key-name", named_key.id),
        "audit": ("memory.updated", "person.updated", "extraction.switch_set"),
        "organisation": ("cnry-organisation-name",),
        "agents": ("cnry-agent-instructions", agent["id"]),
        "switch": ("cnry-switch-instructions", switch["connector_id"]),
        "structure": ("cnry-index-name", "cnry-elsewhere", index.id, elsewhere.id),
        "webhooks": ("cnry-webhook", webhook.id),
    }
    yield World(ids=ids, clients=clients, canaries=canaries, model=model)
    model.stop()


def victim_state(world: World, asset: str, organisation_id: str):
    """What an attacker must not change, per asset (retrieval counts excepted: a permitted read raises them)."""
    records = MemoryRecord.objects.for_organisation(organisation_id)
    record_fields = ("id", "text", "status", "metadata", "confidence", "confirmations", "updated_at")
    if asset == "anna":
        return (
            sorted(records.filter(subject="anna").values_list(*record_fields)),
            sorted(Person.objects.for_organisation(organisation_id).filter(subject="anna").values_list("id", "helper_model_may_read")),
        )
    if asset == "anna_thread":
        return (
            sorted(Thread.objects.for_organisation(organisation_id).filter(subject="anna").values_list("id", "metadata", "item_count")),
            sorted(Item.objects.for_organisation(organisation_id).filter(thread__subject="anna").values_list("id", "content")),
        )
    if asset == "records":
        return sorted(records.filter(index_id=world.ids["idx"]).values_list(*record_fields))
    if asset == "index":
        return (
            list(KnowledgeIndex.objects.for_organisation(organisation_id).filter(pk=world.ids["idx"]).values_list("name", "deleted_at")),
            list(MemoryStore.objects.for_organisation(organisation_id).filter(pk=world.ids["idx"]).values_list("injection", "lessons", "promotion", "maintenance")),
        )
    if asset == "keys":
        return sorted(ApiKey.objects.for_organisation(organisation_id).values_list("id", "name", "capabilities", "policy", "memory", "revoked_at"))
    if asset == "organisation":
        return list(Organisation.objects.filter(pk=organisation_id).values_list("name", "timezone", "capabilities", "rate_limit_per_minute", "updated_at"))
    if asset == "agents":
        return sorted(Agent.objects.for_organisation(organisation_id).values_list("id", "deleted_at"))
    if asset == "switch":
        from extraction.models import ExtractionSwitch

        return sorted(ExtractionSwitch.objects.for_organisation(organisation_id).values_list("index_id", "enabled", "instructions", "model"))
    if asset == "structure":
        return (
            sorted(KnowledgeIndex.objects.for_organisation(organisation_id).values_list("id", "name", "deleted_at")),
            sorted(MemoryStore.objects.for_organisation(organisation_id).values_list("index_id", "injection", "lessons", "promotion", "maintenance")),
        )
    if asset == "webhooks":
        return sorted(WebhookSubscription.objects.for_organisation(organisation_id).values_list("id", "url", "events", "status", "description"))
    return None  # audit: append-only anyway; its canaries are what matters


def writes_so_far() -> dict[str, int]:
    """Rows inserted, updated or deleted per table in this transaction (PostgreSQL's own count)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT relname, n_tup_ins + n_tup_upd + n_tup_del FROM pg_stat_xact_user_tables")
        return dict(cursor.fetchall())


def new_audit_actions(before_count: int) -> list[str]:
    from audit.models import AuditEvent

    return list(AuditEvent.objects.unscoped().order_by("id").values_list("action", flat=True)[before_count:])


# --- the routes ----------------------------------------------------------------------------
# Each entry: (method, path, body) and the expected status per attacker. Statuses not named
# follow DEFAULTS: revoked and anonymous 401, everyone else the owner's status.

DENIED = {"revoked": 401, "anonymous": 401}


def expect(owner: int, **others: int) -> dict[str, int]:
    statuses = {attacker: owner for attacker in ATTACKERS}
    statuses.update(DENIED)
    statuses.update(others)
    return statuses


MANAGEMENT = {"without_capability": 403, "token_of_bob": 403}
# A route that needs `threads`.
NO_THREADS = {"without_threads": 403}
MEMORY_READ = {"policy_without_index": 404, "write_only": 403, "without_capability": 403}
MEMORY_WRITE = {"policy_without_index": 404, "read_only": 403, "without_capability": 403}

ROUTES: dict[tuple[str, str], tuple[str, dict | str | None, dict[str, int]]] = {
    ("v1/tenants/<str:organisation_id>", "GET"): ("/v1/tenants/{org}", None, expect(200, other_organisation=404, **MANAGEMENT)),
    ("v1/tenants/<str:organisation_id>", "PATCH"): ("/v1/tenants/{org}", {}, expect(200, other_organisation=404, **MANAGEMENT)),
    ("v1/tenants/<str:organisation_id>/keys", "GET"): ("/v1/tenants/{org}/keys", None, expect(200, other_organisation=404, **MANAGEMENT)),
    ("v1/tenants/<str:organisation_id>/keys", "POST"): (
        "/v1/tenants/{org}/keys", {"name": "new"}, expect(201, other_organisation=404, **MANAGEMENT)
    ),
    ("v1/tenants/<str:organisation_id>/keys/<str:key_id>", "GET"): (
        "/v1/tenants/{org}/keys/{named_key}", None, expect(200, other_organisation=404, **MANAGEMENT)
    ),
    ("v1/tenants/<str:organisation_id>/keys/<str:key_id>", "PATCH"): (
        "/v1/tenants/{org}/keys/{named_key}", {}, expect(200, other_organisation=404, **MANAGEMENT)
    ),
    ("v1/tenants/<str:organisation_id>/keys/<str:key_id>", "DELETE"): (
        "/v1/tenants/{org}/keys/{named_key}", None, expect(200, other_organisation=404, **MANAGEMENT)
    ),
    ("v1/subject-tokens", "POST"): ("/v1/subject-tokens", {"subject": "anna"}, expect(201, token_of_bob=403)),
    ("v1/persons/<subject:subject>/export", "GET"): ("/v1/persons/anna/export", None, expect(200, header_bob=403, **MANAGEMENT)),
    ("v1/persons/<subject:subject>", "PATCH"): (
        "/v1/persons/anna", {"helper_model_may_read": True}, expect(200, without_capability=403, token_of_bob=403, header_bob=403)
    ),
    ("v1/persons/<subject:subject>", "DELETE"): ("/v1/persons/anna", None, expect(200, header_bob=403, **MANAGEMENT)),
    ("v1/models", "GET"): ("/v1/models", None, expect(200)),
    ("v1/embedding-models", "GET"): ("/v1/embedding-models", None, expect(200)),
    ("v1/rerank-models", "GET"): ("/v1/rerank-models", None, expect(200)),
    ("v1/threads", "POST"): ("/v1/threads", {"subject": "anna"}, expect(201, without_capability=403, token_of_bob=403, **NO_THREADS)),
    ("v1/threads/<str:thread_id>", "GET"): (
        "/v1/threads/{thread}", None, expect(200, other_organisation=404, without_capability=403, token_of_bob=404, header_bob=404, **NO_THREADS)
    ),
    ("v1/threads/<str:thread_id>/items", "GET"): (
        "/v1/threads/{thread}/items", None, expect(200, other_organisation=404, without_capability=403, token_of_bob=404, header_bob=404, **NO_THREADS)
    ),
    ("v1/threads/<str:thread_id>/items", "POST"): (
        "/v1/threads/{thread}/items",
        {"items": [{"role": "user", "content": "injected"}]},
        expect(201, other_organisation=404, without_capability=403, token_of_bob=404, header_bob=404, **NO_THREADS),
    ),
    ("v1/agents", "GET"): ("/v1/agents", None, expect(200)),
    ("v1/agents", "POST"): ("/v1/agents", {"name": "other", "model": "fake-chat"}, expect(201, token_of_bob=403)),
    ("v1/agents/<str:agent_id>", "GET"): ("/v1/agents/{agent}", None, expect(200, other_organisation=404)),
    ("v1/agents/<str:agent_id>", "DELETE"): ("/v1/agents/{agent}", None, expect(204, other_organisation=404, token_of_bob=403)),
    ("v1/agents/<str:agent_id>/versions", "POST"): (
        "/v1/agents/{agent}/versions", {"model": "fake-chat"}, expect(201, other_organisation=404, token_of_bob=403)
    ),
    ("v1/responses", "POST"): (
        "/v1/responses",
        {"model": "fake-chat", "input": "cnry", "thread_id": "{thread}", "tools": [{"type": "tool", "name": "memory__{idx}__search"}]},
        # A memory tool of an index the key cannot search is a 400 on tools[0]. Another
        # key's thread is continued only with `threads` (issue 28), and is looked for first.
        expect(
            200, other_organisation=404, token_of_bob=404, header_bob=404, policy_without_index=400, write_only=400,
            without_capability=404, without_threads=404,
        ),
    ),
    # A turn is read on a thread its key started, or by one with `threads` (which reads every conversation).
    ("v1/responses/<str:response_id>", "GET"): (
        "/v1/responses/{response}", None,
        expect(200, other_organisation=404, without_capability=404, token_of_bob=404, header_bob=404, without_threads=404),
    ),
    ("v1/tools", "GET"): ("/v1/tools", None, expect(200, without_capability=403)),
    ("v1/indexes", "GET"): ("/v1/indexes", None, expect(200, without_capability=403)),
    ("v1/indexes", "POST"): ("/v1/indexes", {"name": "new"}, expect(201, without_capability=403, token_of_bob=403)),
    ("v1/indexes/<str:index_id>", "GET"): (
        "/v1/indexes/{idx}", None, expect(200, other_organisation=404, policy_without_index=404, without_capability=403)
    ),
    ("v1/indexes/<str:index_id>", "PATCH"): (
        "/v1/indexes/{idx}",
        {"name": "renamed"},
        expect(200, other_organisation=404, policy_without_index=404, read_only=403, without_capability=403, token_of_bob=403),
    ),
    ("v1/indexes/<str:index_id>", "DELETE"): (
        "/v1/indexes/{idx}",
        None,
        expect(204, other_organisation=404, policy_without_index=404, read_only=403, without_capability=403, token_of_bob=403),
    ),
    ("v1/memory/stores/<str:index_id>", "GET"): (
        "/v1/memory/stores/{idx}", None, expect(200, other_organisation=404, **MEMORY_READ)
    ),
    ("v1/memory/stores/<str:index_id>", "PATCH"): (
        "/v1/memory/stores/{idx}", {}, expect(200, other_organisation=404, token_of_bob=403, **MEMORY_WRITE)
    ),
    ("v1/memory", "GET"): ("/v1/memory?index_id={idx}", None, expect(200, other_organisation=404, **MEMORY_READ)),
    ("v1/memory", "POST"): (
        "/v1/memory", {"index_id": "{idx}", "type": "fact", "text": "new fact"}, expect(201, other_organisation=404, **MEMORY_WRITE)
    ),
    ("v1/memory/search", "POST"): (
        "/v1/memory/search", {"index_id": "{idx}", "query": "cnry anna shared bob"}, expect(200, other_organisation=404, **MEMORY_READ)
    ),
    ("v1/memory/batch", "POST"): (
        "/v1/memory/batch",
        {"index_id": "{idx}", "records": [{"type": "fact", "text": "batched fact"}]},
        expect(200, other_organisation=404, **MEMORY_WRITE),
    ),
    # Each id is answered as a single delete would be (404, 403 inside a 200): the matrix checks nothing of hers changed.
    ("v1/memory/batch/delete", "POST"): ("/v1/memory/batch/delete", {"ids": ["{anna_record}"]}, expect(200, without_capability=403)),
    ("v1/memory/import", "POST"): (
        "/v1/memory/import?index_id={idx}",
        '{"type": "fact", "text": "imported"}\n',
        expect(200, other_organisation=404, **MEMORY_WRITE),
    ),
    ("v1/memory/<record_id:record_id>", "GET"): (
        "/v1/memory/{anna_record}", None, expect(200, other_organisation=404, token_of_bob=404, header_bob=404, **MEMORY_READ)
    ),
    ("v1/memory/<record_id:record_id>", "PATCH"): (
        "/v1/memory/{anna_record}",
        {"confidence": 0.5},
        expect(200, other_organisation=404, token_of_bob=404, header_bob=404, write_only=204, **MEMORY_WRITE),
    ),
    ("v1/memory/<record_id:record_id>", "DELETE"): (
        "/v1/memory/{anna_record}", None, expect(204, other_organisation=404, token_of_bob=404, header_bob=404, **MEMORY_WRITE)
    ),
    ("v1/memory/<record_id:record_id>/history", "GET"): (
        "/v1/memory/{anna_record}/history", None, expect(200, other_organisation=404, token_of_bob=404, header_bob=404, **MEMORY_READ)
    ),
    ("v1/memory/stores/<str:index_id>/extraction", "GET"): (
        "/v1/memory/stores/{idx}/extraction", None, expect(200, other_organisation=404, **MEMORY_READ)
    ),
    ("v1/memory/stores/<str:index_id>/extraction", "PUT"): (
        "/v1/memory/stores/{idx}/extraction",
        {"enabled": False},
        expect(200, other_organisation=404, token_of_bob=403, **NO_THREADS, **MEMORY_WRITE),
    ),
    ("v1/connectors/<str:connector_id>", "GET"): (
        "/v1/connectors/{connector}", None, expect(200, other_organisation=404, policy_without_index=404, without_capability=403)
    ),
    ("v1/connectors/<str:connector_id>", "DELETE"): (
        "/v1/connectors/{connector}",
        None,
        expect(204, other_organisation=404, policy_without_index=404, read_only=403, without_capability=403, token_of_bob=403),
    ),
    ("v1/audit", "GET"): ("/v1/audit", None, expect(200, **MANAGEMENT)),
    ("v1/webhooks", "GET"): ("/v1/webhooks", None, expect(200, **MANAGEMENT)),
    ("v1/webhooks", "POST"): (
        "/v1/webhooks", {"url": "http://127.0.0.1:9/new", "events": ["record.created"]}, expect(201, **MANAGEMENT)
    ),
    ("v1/webhooks/<str:webhook_id>", "GET"): ("/v1/webhooks/{webhook}", None, expect(200, other_organisation=404, **MANAGEMENT)),
    ("v1/webhooks/<str:webhook_id>", "PATCH"): (
        "/v1/webhooks/{webhook}", {"description": "changed"}, expect(200, other_organisation=404, **MANAGEMENT)
    ),
    ("v1/webhooks/<str:webhook_id>", "DELETE"): ("/v1/webhooks/{webhook}", None, expect(204, other_organisation=404, **MANAGEMENT)),
    ("v1/webhooks/<str:webhook_id>/deliveries", "GET"): (
        "/v1/webhooks/{webhook}/deliveries", None, expect(200, other_organisation=404, **MANAGEMENT)
    ),
    # Proposals rest on persons' records: the organisation's to decide, never a request for one person.
    ("v1/memory/proposals", "GET"): ("/v1/memory/proposals", None, expect(200, header_bob=403, **MANAGEMENT)),
    ("v1/memory/proposals/<str:proposal_id>/apply", "POST"): (
        "/v1/memory/proposals/{proposal}/apply",
        None,
        expect(200, other_organisation=404, policy_without_index=404, read_only=403, header_bob=403, **MANAGEMENT),
    ),
    ("v1/memory/proposals/<str:proposal_id>/reject", "POST"): (
        "/v1/memory/proposals/{proposal}/reject",
        None,
        expect(200, other_organisation=404, policy_without_index=404, read_only=403, header_bob=403, **MANAGEMENT),
    ),
    # The OpenAI-compatible surface: the same turns, so the same rights. Every key offers the
    # memory tools its own configuration offers; the model asks the search tool for everything.
    ("openai/v1/chat/completions", "POST"): (
        "/openai/v1/chat/completions", {"model": "fake-chat", "messages": [{"role": "user", "content": "cnry"}]}, expect(200)
    ),
    ("openai/v1/responses", "POST"): (
        "/openai/v1/responses",
        {"model": "fake-chat", "input": "cnry", "previous_response_id": "{response}"},
        expect(200, other_organisation=404, without_capability=404, token_of_bob=404, header_bob=404, without_threads=404),
    ),
    ("openai/v1/responses/<str:response_id>", "GET"): (
        "/openai/v1/responses/{response}", None,
        expect(200, other_organisation=404, without_capability=404, token_of_bob=404, header_bob=404, without_threads=404),
    ),
    ("openai/v1/models", "GET"): ("/openai/v1/models", None, expect(200)),
    ("openai/v1/models/<path:model_id>", "GET"): ("/openai/v1/models/fake-chat", None, expect(200)),
}
TURN_ROUTES = {"v1/responses", "openai/v1/chat/completions", "openai/v1/responses"}
# Routes outside the tenant's data: the API document and its pages answer everyone the same.
PUBLIC_ROUTES = {("v1/schema", "GET"), ("v1/docs", "GET"), ("v1/redoc", "GET")}


def _api_routes() -> set[tuple[str, str]]:
    found = set()

    def walk(patterns, prefix=""):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, prefix + str(pattern.pattern))
            elif isinstance(pattern, URLPattern):
                route = prefix + str(pattern.pattern)
                view = getattr(pattern.callback, "view_class", None) or getattr(pattern.callback, "cls", None)
                if route.startswith(("v1/", "openai/v1/")) and view is not None:
                    for method in ("get", "post", "put", "patch", "delete"):
                        if hasattr(view, method):
                            found.add((route, method.upper()))

    walk(get_resolver().url_patterns)
    return found


def _is_management(route: tuple[str, str]) -> bool:
    """The organisation's administration: the view asks `management` for this method (ORGANISATION_WIDE)."""
    from django.urls import resolve

    path = ROUTES[route][0].split("?")[0].format(**{name: "x" for name in ("org", "named_key", "idx", "thread", "agent", "connector", "proposal", "response", "webhook")}, anna_record="mem_x")
    view = resolve(path).func.view_class
    required = view.required_capabilities
    required = required.get(route[1], ()) if isinstance(required, dict) else required
    return "management" in required


def test_every_route_is_in_the_matrix():
    """A route or method added without an entry here fails: the matrix cannot fall behind."""
    assert _api_routes() - set(ROUTES) - PUBLIC_ROUTES == set()
    assert set(ROUTES) - _api_routes() == set()


def _fill(value, world: World):
    if isinstance(value, str):
        return value.format(**world.ids)
    if isinstance(value, dict):
        return {name: _fill(item, world) for name, item in value.items()}
    if isinstance(value, list):
        return [_fill(item, world) for item in value]
    return value


def _rolled_back():
    """A savepoint that is always rolled back, marked as the test case's own so that the
    services' durable transactions run inside it as they do inside the test's."""
    block = transaction.atomic()
    block._from_testcase = True
    return block


class _Undo(Exception):
    pass


def _call(world: World, attacker: str, method: str, path: str, body):
    client = world.clients[attacker]
    url = world.path(path)
    if isinstance(body, str):  # JSON Lines, sent as they are
        return client.generic(method, url, body, content_type="application/x-ndjson")
    data = json.dumps(_fill(body, world)) if body is not None else ""
    return client.generic(method, url, data, content_type="application/json")


def _search_tool_call(world: World) -> None:
    """The model asks the memory search tool for everything, so a tool result would carry any leak."""
    world.model.answer(completion(tool_calls=[("call_1", f"memory__{world.ids['idx']}__search", {"query": "cnry anna shared bob"})]))
    world.model.reply("done")


@pytest.mark.parametrize("route", sorted(ROUTES), ids=lambda route: f"{route[1]} {route[0]}")
def test_isolation_matrix(world, route):
    method, (path, body, statuses) = route[1], ROUTES[route]
    from audit.models import AuditEvent

    failures = []
    organisation_id = world.ids["org"]
    # The owner last: its call may change what the others must find unchanged.
    for attacker in sorted(ATTACKERS, key=lambda name: name == "owner"):
        hidden = set(FORBIDDEN[attacker]) | set(UNREADABLE.get(attacker, ()))
        fixed = set(FORBIDDEN[attacker]) | set(UNCHANGEABLE.get(attacker, ()))
        if _is_management(route):
            hidden -= set(ORGANISATION_WIDE.get(attacker, ()))
            fixed -= set(ORGANISATION_WIDE.get(attacker, ()))
        try:
            with _rolled_back():
                states = {asset: victim_state(world, asset, organisation_id) for asset in fixed}
                events = AuditEvent.objects.unscoped().count()
                writes = writes_so_far()
                world.model.requests.clear()
                if route[0] in TURN_ROUTES:
                    _search_tool_call(world)
                response = _call(world, attacker, method, path, body)
                content = response.content.decode(errors="replace")
                sent_to_model = json.dumps([request.body for request in world.model.requests])
                if route[0] in TURN_ROUTES:
                    # The scripted model names the victim's search tool itself; that name coming back
                    # (in its own call, or in an "unknown tool" result) is no leak of Core's.
                    sent_to_model = sent_to_model.replace(f"memory__{world.ids['idx']}__search", "memory__…__search")
                changed = {asset for asset in fixed if victim_state(world, asset, organisation_id) != states[asset]}
                written = {table for table, count in writes_so_far().items() if count != writes.get(table, 0)}
                actions = new_audit_actions(events)
                raise _Undo
        except _Undo:
            pass
        # What the attacker sent itself (an id in the path, say) is no leak when it comes back.
        asked = world.path(path) + (body if isinstance(body, str) else json.dumps(_fill(body, world)))
        leaked = sorted(
            canary
            for asset in hidden
            for canary in world.canaries[asset]
            if canary not in asked and (canary in content or canary in sent_to_model)
        )
        problems = []
        if response.status_code != statuses[attacker]:
            problems.append(f"status {response.status_code} (expected {statuses[attacker]}): {content[:200]}")
        if leaked:
            problems.append(f"leaked {leaked}")
        if changed:
            problems.append(f"changed {sorted(changed)}: {content[:300]}")
        if response.status_code >= 400:
            denial_writes = written - {"audit_auditevent", "audit_auditchainhead"}
            if denial_writes or any(action != "memory.write_denied" for action in actions):
                problems.append(f"a refusal wrote {sorted(denial_writes)} {actions}")
        if problems:
            failures.append(f"{attacker}: {'; '.join(problems)}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("route", sorted(PUBLIC_ROUTES), ids=lambda route: route[0])
def test_the_public_pages_carry_no_tenant_data(world, route):
    """The API document and its pages answer anyone alike, and name nothing of a tenant."""
    response = world.clients["anonymous"].get("/" + route[0])

    assert response.status_code == 200
    content = response.content.decode()
    assert [canary for canaries in world.canaries.values() for canary in canaries if canary in content] == []


@pytest.mark.parametrize("attacker", ["token_of_bob", "header_bob", "read_only", "write_only", "policy_without_index", "other_organisation"])
def test_a_turn_injects_and_searches_only_what_its_caller_may_see(world, attacker):
    """R-7.5, R-6.4, R-12.1: a turn for bob, or by a key without the index or without its read
    right, gets neither anna's records in its memory block nor in a search tool's result; the
    shared record reaches bob."""
    from core_memory.keys.configuration import memory_config_normalise

    injection = memory_config_normalise({"injection": {"enabled": True, "index_id": world.ids["idx"], "types": []}})
    ApiKey.objects.for_organisation(world.ids["org"]).update(memory=injection)
    world.model.requests.clear()
    _search_tool_call(world)
    tools = [{"type": "tool", "name": f"memory__{world.ids['idx']}__search"}] if attacker in ("token_of_bob", "header_bob", "read_only") else []
    body = {"model": "fake-chat", "input": "cnry anna shared bob", "tools": tools}
    if attacker == "read_only":
        body["user"] = "bob"

    response = world.clients[attacker].post("/v1/responses", body, format="json")

    assert response.status_code == 200, response.content
    sent = json.dumps([request.body for request in world.model.requests]) + response.content.decode()
    assert [canary for canary in world.canaries["anna"] if canary in sent] == []
    if attacker in ("policy_without_index", "other_organisation", "write_only"):
        assert [canary for canary in world.canaries["records"] if canary in sent] == []
    else:
        assert "cnry-shared-fact" in sent  # the shared record did reach her turn: the check can see


@pytest.mark.parametrize(
    ("attacker", "status"),
    [("token_of_bob", 200), ("header_bob", 200), ("read_only", 400), ("policy_without_index", 400), ("other_organisation", 400), ("without_capability", 400)],
)
def test_a_turns_write_tool_writes_only_for_its_caller_where_it_may_write(world, attacker, status):
    """R-6.2, R-6.3, R-12.1: the model's write lands for the caller's person (bob), never anna's,
    and a key that may not write the index is refused the tool before the model is asked."""
    write_tool = {"write_tool": True, "retrieval_tool": True}
    ApiKey.objects.for_organisation(world.ids["org"]).update(memory=write_tool)
    ApiKey.objects.for_organisation(world.ids["other_org"]).update(memory=write_tool)
    world.model.requests.clear()
    tool = f"memory__{world.ids['idx']}__write"
    world.model.answer(completion(tool_calls=[("call_1", tool, {"type": "fact", "text": "Anna is ontslagen"})]))
    world.model.reply("done")
    anna_before = victim_state(world, "anna", world.ids["org"])
    records_before = MemoryRecord.objects.unscoped().count()

    response = world.clients[attacker].post(
        "/v1/responses", {"model": "fake-chat", "input": "schrijf het op", "tools": [{"type": "tool", "name": tool}]}, format="json"
    )

    assert response.status_code == status, response.content
    assert victim_state(world, "anna", world.ids["org"]) == anna_before
    new = list(MemoryRecord.objects.unscoped().filter(text="Anna is ontslagen").values_list("index_id", "subject"))
    if status == 200:
        assert new == [(world.ids["idx"], "bob")]
    else:
        assert (new, MemoryRecord.objects.unscoped().count(), world.model.requests) == ([], records_before, [])


# --- a narrow key reads another key's thread (R-4.2: a record of an index a key may not use is
# exactly as absent as that index, also in what a thread kept of it) ---------------------------

A1_TEXT = "cnry-a1-only Zoe woont in Haarlem"


@pytest.fixture
def thread_of_another_key(tenant, fake_model):
    """The owner ran a turn for zoe on its thread: the model searched index A1 and its tool result
    holds an A1 record's text. A second key names only index A2 (read, write, `threads`)."""
    turn, a2 = owner_turn_that_read_a1(tenant, fake_model, text=A1_TEXT)
    narrow, narrow_secret = make_key(tenant.organisation, name="narrow", read=(a2.id,), write=(a2.id,))
    fake_model.requests.clear()
    return turn.json()["thread_id"], narrow, narrow_secret


def test_a_narrow_key_reads_another_keys_thread_without_the_index_it_may_not_read(tenant, thread_of_another_key):
    """Issue: a key whose policy names only A2 read, through GET /v1/threads/{id}/items, the tool
    result holding an A1 record's text. The call and result are there, withheld; the owner still
    reads them (the check can see)."""
    thread_id, _narrow, secret = thread_of_another_key

    narrow_items = client_for(secret, subject="zoe").get(f"/v1/threads/{thread_id}/items").json()["data"]
    owner_items = tenant.client(subject="zoe").get(f"/v1/threads/{thread_id}/items").json()["data"]

    assert A1_TEXT not in json.dumps(narrow_items) and tenant.index.id not in json.dumps(narrow_items)
    assert [(item["kind"], item["withheld"], item["content"]) for item in narrow_items if item["withheld"]] == [
        ("tool_call", True, None), ("tool_result", True, None),
    ]
    assert len(narrow_items) == len(owner_items)
    assert A1_TEXT in json.dumps(owner_items) and not any(item["withheld"] for item in owner_items)


def test_a_subject_token_of_the_narrow_key_reads_no_more(tenant, thread_of_another_key):
    thread_id, narrow, _secret = thread_of_another_key
    _token, token_secret = subject_token_create(caller=Caller(key=narrow, subject="zoe"), ttl_seconds=600)

    items = client_for(token_secret).get(f"/v1/threads/{thread_id}/items")

    assert items.status_code == 200
    assert A1_TEXT not in items.content.decode()


def test_continuing_another_keys_thread_sends_the_model_nothing_of_an_index_the_key_may_not_read(tenant, thread_of_another_key, fake_model):
    """Issue: continuing that thread with POST /v1/responses sent the A1 text to the model."""
    thread_id, _narrow, secret = thread_of_another_key
    fake_model.reply("Dat weet ik niet.")

    turn = client_for(secret, subject="zoe").post("/v1/responses", {"model": "fake-chat", "input": "En nu?", "thread_id": thread_id}, format="json")

    assert turn.status_code == 200, turn.content
    sent = json.dumps([request.body for request in fake_model.requests])
    assert "Waar woon ik?" in sent  # the thread's history did reach the model: the check can see
    assert A1_TEXT not in sent and tenant.index.id not in sent


@pytest.mark.parametrize("address", ["/v1/responses/{id}", "/openai/v1/responses/{id}"])
def test_a_narrow_key_reads_another_keys_turn_back_without_the_index_it_may_not_read(tenant, thread_of_another_key, address):
    """R-4.2: reading a turn back (Core's route and the OpenAI-compatible one) shows the narrow key
    nothing of the A1 search the turn ran; the owner still reads it (the check can see)."""
    thread_id, _narrow, secret = thread_of_another_key
    response_id = Thread.objects.for_organisation(tenant.organisation.id).get(id=thread_id).responses.get().id

    narrow = client_for(secret, subject="zoe").get(address.format(id=response_id))
    owner = tenant.client(subject="zoe").get(address.format(id=response_id))

    assert narrow.status_code == 200 and owner.status_code == 200, (narrow.content, owner.content)
    assert A1_TEXT not in narrow.content.decode() and tenant.index.id not in narrow.content.decode()
    if address.startswith("/v1/"):
        assert A1_TEXT in owner.content.decode()


def test_a_narrow_keys_export_of_her_holds_nothing_of_an_index_it_may_not_read(tenant, thread_of_another_key):
    thread_id, _narrow, secret = thread_of_another_key

    narrow = client_for(secret).get("/v1/persons/zoe/export")
    owner = tenant.client().get("/v1/persons/zoe/export")

    assert narrow.status_code == 200 and A1_TEXT not in narrow.content.decode()
    assert [thread["id"] for thread in narrow.json()["threads"]] == [thread_id]
    assert A1_TEXT in owner.content.decode()
