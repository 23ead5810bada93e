"""Every statement of the hot paths names its organisation, so that on a database distributed by
organisation (Citus, docs/scaling.md) each would be routed to the one shard holding it.

The write, the search (full text and hybrid), the memory block with past sessions and a turn
(a new thread, then one continued) run through the API with every statement captured. Each
statement that touches a table distributed by organisation must name the organisation on every
such table it touches: `<table or alias>.organisation_id = …` (or `IN`/`ANY` of one), an INSERT
that writes the column, or — for the tables that docs/scaling.md says gain the column — the key
of the row that holds it. Reference tables (replicated to every node) need nothing."""
from __future__ import annotations

import re

import pytest
from django.apps import apps
from django.db import connection

from core_memory.base.callers import Caller
from memory.services.writes import record_write
from stores.services import store_update
from tests.factories import client_for, make_index, make_key, resolved_for, with_draft

pytestmark = pytest.mark.django_db

# docs/scaling.md, "Distribution": every table below is distributed by organisation_id.
DISTRIBUTED = {
    "agents_agent", "audit_auditchainhead", "audit_auditevent", "core_api_idempotentrequest",
    "extraction_extractionconnector", "extraction_extractionrun", "extraction_extractionswitch", "extraction_extractionwindow",
    "keys_keytrailentry", "llm_tokenusage", "maintenance_contradictioncheck", "maintenance_episodeuse",
    "maintenance_maintenancejob", "maintenance_maintenancerun", "maintenance_maintenancestate", "maintenance_promotionreview",
    "maintenance_proposal", "memory_embeddingbatch", "memory_embeddingswitchrun", "memory_historicalmemoryrecord", "memory_memoryrecord", "memory_modelembedding", "memory_recordembedding",
    "memory_sharedsetversion", "persons_person", "pii_threadplaceholders", "stores_knowledgeindex", "threads_response",
    "threads_thread", "webhooks_webhookattempt", "webhooks_webhookdelivery", "webhooks_webhookevent", "webhooks_webhooksubscription",
}
# Distributed too, but without the column today: docs/scaling.md adds it. Until then a statement
# names the organisation through the key of the row that holds it.
IMPLIED_BY = {
    "agents_agentversion": ("agent_id",),
    "extraction_extractioncursor": ("switch_id", "thread_id"),
    "maintenance_proposalsource": ("proposal_id", "record_id"),
    "memory_memoryrecord_contradicts": ("from_memoryrecord_id", "to_memoryrecord_id"),
    "stores_memorystore": ("index_id",),
    "threads_item": ("thread_id",),
    "threads_thread_agents": ("thread_id",),
}
# Replicated to every node: small, and read before an organisation is known (authentication,
# console login). Django's and other packages' own tables are reference tables too.
REFERENCE = {"organisations_organisation", "keys_apikey", "keys_subjecttoken", "console_consoleadministrator"}
OURS = ("core_memory", "memory", "stores", "extraction", "maintenance", "audit")

_TABLE = re.compile(r'\b(FROM|JOIN|INTO|UPDATE)\s+"?([a-z_][a-z0-9_]*)"?(?:\s+(?:AS\s+)?"?([A-Za-z_][A-Za-z0-9_]*)"?)?', re.IGNORECASE)
_NOT_ALIAS = {"where", "on", "set", "values", "inner", "left", "right", "full", "join", "order", "group", "limit", "using",
              "returning", "cross", "lateral", "union", "default", "select", "as", "natural", "for", "window", "having"}


def _scope(sql: str, start: int) -> str:
    """The part of `sql` from `start` to the end of the parenthesised query it stands in."""
    depth = 0
    for position in range(start, len(sql)):
        if sql[position] == "(":
            depth += 1
        elif sql[position] == ")":
            if depth == 0:
                return sql[start:position]
            depth -= 1
    return sql[start:]


def _top_level(text: str) -> str:
    """`text` without what its parentheses hold (the subqueries and the calls)."""
    kept, depth = [], 0
    for character in text:
        depth += character == "("
        if depth == 0:
            kept.append(character)
        depth -= character == ")" and depth > 0
    return "".join(kept)


def unrouted(sql: str) -> list[str]:
    """The distributed tables a statement touches without naming their organisation: for each
    table, in the (sub)query that names it, `<table or alias>.<column>` compared with a value, a
    list or an array — or the bare column where that query names no other table; an INSERT that
    writes the column; for a table that gains the column later, its key compared with anything
    (a value, or the row of a table that names the organisation)."""
    missing = []
    for found in _TABLE.finditer(sql):
        verb, table, alias = found.group(1).upper(), found.group(2), found.group(3)
        if table not in DISTRIBUTED and table not in IMPLIED_BY:
            continue
        alias = None if not alias or alias.lower() in _NOT_ALIAS else alias
        columns = ("organisation_id",) if table in DISTRIBUTED else IMPLIED_BY[table]
        if verb == "INTO":
            listed = re.search(r"\(([^)]*)\)", sql[found.end() :])
            if listed and any(re.search(rf'"?\b{column}\b"?', listed.group(1)) for column in columns):
                continue
            missing.append(table)
            continue
        # The query this table stands in: from the start of its parentheses (or the statement).
        opened = sql.rfind("(", 0, found.start())
        while opened != -1 and len(_scope(sql, opened + 1)) < found.start() - opened - 1:
            opened = sql.rfind("(", 0, opened)
        query = _scope(sql, opened + 1) if opened != -1 else sql
        alone = len(_TABLE.findall(_top_level(query))) == 1
        qualifiers = "|".join(re.escape(name) for name in {table, *([alias] if alias else [])})
        qualified = rf'(?:"?(?:{qualifiers})"?\.)' + ("?" if alone else "")
        names = any(re.search(qualified + rf'"?{column}"?\s*(?:=|IN\b)', query, re.IGNORECASE) for column in columns)
        if table in IMPLIED_BY and not names:
            names = any(re.search(rf'=\s*"?(?:{qualifiers})"?\."?{column}"?', query, re.IGNORECASE) for column in columns)
        if not names:
            missing.append(table)
    return missing


class Captured:
    def __init__(self):
        self.statements: list[str] = []

    def __call__(self, execute, sql, params, many, context):
        self.statements.append(sql)
        return execute(sql, params, many, context)

    def unrouted(self) -> dict[str, list[str]]:
        """Each statement that touches a distributed table without naming its organisation."""
        return {sql: missing for sql in self.statements if (missing := unrouted(sql))}


def test_every_statement_of_the_hot_paths_names_its_organisation(tenant, fake_model, vectors):
    """A write (a person's, a shared one, one replayed), a full-text and a hybrid search, and turns
    (the block with past sessions, the search and write tools, a thread opened and continued)."""
    hybrid = resolved_for(tenant.key, make_index(tenant.organisation, name="hybrid", embeddings=True))
    _key, secret = make_key(tenant.organisation, memory={
        "retrieval_tool": True, "write_tool": True, "injection": {"enabled": True, "index_id": tenant.index.id},
    })
    store_update(caller=Caller.system(organisation_id=tenant.index.store.index.organisation_id, actor="test"), store=tenant.index.store, sections={"injection": {"episodes_limit": 3}}, may_promote=False)
    vectors(record_write(caller=Caller(key=tenant.key, subject="anna", actor="test"), index=hybrid, **with_draft(type="fact", text="Anna woont in Utrecht.")).record)
    anna, backend = client_for(secret, subject="anna"), client_for(secret)
    search, write = f"memory__{tenant.index.id}__search", f"memory__{tenant.index.id}__write"
    tools = [{"type": "tool", "name": search}, {"type": "tool", "name": write}]

    with connection.execute_wrapper(captured := Captured()):
        assert anna.post("/v1/memory", {"index_id": tenant.index.id, "type": "preference", "text": "Anna wil facturen per e-mail."}, format="json").status_code == 201
        assert backend.post("/v1/memory", {"index_id": tenant.index.id, "type": "fact", "text": "Het kantoor sluit om vijf uur."}, format="json").status_code == 201
        replayed = {"index_id": tenant.index.id, "type": "fact", "text": "Anna woont in Utrecht."}
        for _ in range(2):
            assert anna.post("/v1/memory", replayed, format="json", HTTP_IDEMPOTENCY_KEY="write-1").status_code == 201
        for index in (tenant.index, hybrid):
            assert anna.post("/v1/memory/search", {"index_id": index.id, "query": "facturen Utrecht"}, format="json").status_code == 200
        fake_model.reply(tool_calls=[("call_1", search, {"query": "facturen"}), ("call_2", write, {"type": "fact", "text": "Anna betaalt per maand."})])
        fake_model.reply("Ik stuur de factuur per e-mail.")
        first = anna.post("/v1/responses", {"model": "fake-chat", "input": "Stuur de factuur.", "tools": tools}, format="json")
        assert first.status_code == 200 and first.json()["status"] == "completed", first.content
        fake_model.reply("Graag gedaan.")
        again = anna.post("/v1/responses", {"model": "fake-chat", "input": "Dank je.", "thread_id": first.json()["thread_id"]}, format="json")
        assert again.status_code == 200 and again.json()["status"] == "completed", again.content
    assert len(captured.statements) > 50
    assert captured.unrouted() == {}



def test_every_table_of_ours_is_placed():
    """A new table is placed (docs/scaling.md, "Where each table goes") before it is used."""
    tables = {model._meta.db_table for model in apps.get_models(include_auto_created=True) if model.__module__.split(".")[0] in OURS}
    assert tables == DISTRIBUTED | set(IMPLIED_BY) | REFERENCE


@pytest.mark.parametrize(
    ("statement", "missing"),
    [
        ('SELECT "memory_memoryrecord"."id" FROM "memory_memoryrecord" WHERE "memory_memoryrecord"."id" = %s', ["memory_memoryrecord"]),
        ('UPDATE "threads_response" SET "status" = %s WHERE "threads_response"."id" = %s', ["threads_response"]),
        ('SELECT "memory_memoryrecord"."organisation_id" FROM "memory_memoryrecord" WHERE "memory_memoryrecord"."index_id" = %s', ["memory_memoryrecord"]),
        # Two tables: the bare column could be either's.
        ('SELECT 1 FROM "memory_memoryrecord" INNER JOIN "threads_thread" ON (1 = 1) WHERE "memory_memoryrecord"."organisation_id" = %s', ["threads_thread"]),
        ("SELECT (SELECT version FROM memory_sharedsetversion WHERE index_id = %s) FROM memory_memoryrecord r WHERE r.organisation_id = %s", ["memory_sharedsetversion"]),
        ('SELECT "threads_item"."id" FROM "threads_item" WHERE "threads_item"."position" = %s', ["threads_item"]),
        ('INSERT INTO "threads_response" ("id", "thread_id") VALUES (%s, %s)', ["threads_response"]),
        ('SELECT "memory_memoryrecord"."id" FROM "memory_memoryrecord" WHERE "memory_memoryrecord"."organisation_id" = %s', []),
        ("SELECT (SELECT version FROM memory_sharedsetversion WHERE organisation_id = %s) FROM memory_memoryrecord r WHERE r.organisation_id = %s", []),
        ('SELECT "threads_item"."id" FROM "threads_item" WHERE "threads_item"."thread_id" = %s', []),
        ('INSERT INTO "threads_response" ("id", "organisation_id") VALUES (%s, %s)', []),
        ('SELECT "organisations_organisation"."id" FROM "organisations_organisation" WHERE "organisations_organisation"."id" = %s', []),
    ],
)
def test_a_statement_that_does_not_name_its_organisation_is_found(statement, missing):
    assert unrouted(statement) == missing
