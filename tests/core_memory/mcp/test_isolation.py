"""The isolation matrix over MCP (R-12.1, R-2.2, R-6.3, issue 11): what tests/test_isolation.py
does for the API's routes, done for `/mcp` under a real gunicorn.

Every attacker of the API's matrix connects with the official SDK client and asks for the
tool list, searches the victim's index for everything, and writes to it:

- `other_organisation`: another organisation's owner key;
- `policy_without_index`: a key of the victim's organisation whose policy names another index;
- `read_only` / `write_only`: keys whose policy names the victim's index for one right only;
- `without_capability`: a key of the organisation without `memory`;
- `token_of_bob`: a subject token for bob; `header_bob`: a key sending `X-Core-Subject: bob`;
- `revoked`: a revoked key; `anonymous`: no credential.

Each must get exactly the tools and answers its rights give (EXPECTED), no canary of what it
may not see in anything it gets back, and leave anna's records, and the index's records it may
not write, as they were. `owner` proves every call reaches its tool.
"""
from __future__ import annotations

import json

import httpx
import pytest

from core_memory.base.callers import Caller
from core_memory.keys.services import key_revoke, subject_token_create
from memory.models import MemoryRecord
from memory.services.writes import RecordDraft, record_write
from tests.core_memory.mcp.test_server import _payload, _session
from tests.factories import make_index, make_key, resolved_for
from tests.narrow import owner_turn_that_read_a1

pytestmark = pytest.mark.django_db(transaction=True)

WRITING = {"retrieval_tool": True, "write_tool": True}

# attacker: (HTTP status of /mcp, the victim's tools it is offered, what its search finds, whether its write is kept).
# `finds` names the records by who they are about; None is a refused call. A tool call for no
# person searches the shared records only; the owner asks for anna, so the check can see hers.
EXPECTED = {
    "owner": (200, {"search", "write"}, {"anna", "shared"}, True),
    "other_organisation": (200, set(), None, False),
    "policy_without_index": (200, set(), None, False),
    "read_only": (200, {"search"}, {"shared"}, False),
    "write_only": (200, {"write"}, None, True),
    "without_capability": (403, None, None, False),
    "token_of_bob": (200, {"search", "write"}, {"shared", "bob"}, True),
    "header_bob": (200, {"search", "write"}, {"shared", "bob"}, True),
    "revoked": (401, None, None, False),
    "anonymous": (401, None, None, False),
}


@pytest.fixture
def victim(tenant, other_tenant):
    """Anna's, bob's and a shared record in the victim's index, and a credential per attacker."""
    organisation, index = tenant.organisation, tenant.index
    records = {
        who: record_write(caller=Caller(key=tenant.key, subject=subject, actor="test"), index=index, draft=RecordDraft(type="fact", text=f"cnry {who} geheim {who}")).record
        for who, subject in (("anna", "anna"), ("shared", None), ("bob", "bob"))
    }
    elsewhere = make_index(organisation, name="elsewhere")
    _key, owner = make_key(organisation, name="owner-mcp", memory=WRITING)
    _key, other = make_key(other_tenant.organisation, name="other", memory=WRITING)
    _key, policy = make_key(organisation, read=(elsewhere.id,), write=(elsewhere.id,), memory=WRITING)
    _key, read_only = make_key(organisation, write=(), memory=WRITING)
    _key, write_only = make_key(organisation, read=(), memory=WRITING)
    _key, bare = make_key(organisation, capabilities=["knowledge"], memory=WRITING)
    bob_key, _secret = make_key(organisation, memory=WRITING)
    _token, bob_token = subject_token_create(caller=Caller(key=bob_key, subject="bob"), ttl_seconds=600)
    _key, header = make_key(organisation, memory=WRITING)
    revoked_key, revoked = make_key(organisation, memory=WRITING)
    key_revoke(caller=Caller.system(organisation_id=revoked_key.organisation_id, actor="test"), key_id=revoked_key.id)
    credentials = {
        "owner": (owner, "anna"),
        "other_organisation": (other, None),
        "policy_without_index": (policy, None),
        "read_only": (read_only, None),
        "write_only": (write_only, None),
        "without_capability": (bare, None),
        "token_of_bob": (bob_token, None),
        "header_bob": (header, "bob"),
        "revoked": (revoked, None),
        "anonymous": (None, None),
    }
    resolved_for(tenant.key, elsewhere)
    return index.id, records, credentials


def _state(index_id: str):
    records = MemoryRecord.objects.unscoped().filter(index_id=index_id)
    fields = ("id", "subject", "text", "status", "metadata", "confidence", "confirmations", "updated_at")
    return sorted(records.filter(subject="anna").values_list(*fields)), sorted(records.values_list(*fields))


def _found(text: str, records: dict) -> set[str]:
    return {who for who, record in records.items() if record.id in text or record.text in text}


def test_over_mcp_each_caller_gets_exactly_what_its_rights_give(site, victim):
    """R-12.1 over MCP: 10 callers x (the tool list, a search, a write) on the victim's index."""
    index_id, records, credentials = victim
    search, write = f"memory__{index_id}__search", f"memory__{index_id}__write"
    failures, tried = [], 0

    for attacker, (secret, subject) in credentials.items():
        status, offered, finds, kept = EXPECTED[attacker]
        anna_before, all_before = _state(index_id)
        if status != 200:
            headers = {"Accept": "application/json, text/event-stream"} | ({"Authorization": f"Bearer {secret}"} if secret else {})
            calls = [
                {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": search, "arguments": {"query": "cnry"}}},
                {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": write, "arguments": {"type": "fact", "text": "cnry taken"}}},
            ]
            answers = [httpx.post(f"{site}/mcp", headers=headers, json=call) for call in calls]
            tried += len(calls)
            texts = [answer.text for answer in answers]
            if [answer.status_code for answer in answers] != [status] * len(calls):
                failures.append(f"{attacker}: {[answer.status_code for answer in answers]} (expected {status})")
        else:

            async def work(session):
                tools = await session.list_tools()
                found = await session.call_tool(search, {"query": "cnry"})
                written = await session.call_tool(write, {"type": "fact", "text": f"cnry written by {attacker}"})
                return tools, found, written

            _initialised, (tools, found, written) = _session(site, secret, work, subject=subject)
            tried += 3
            listed = {tool.name.rsplit("__", 1)[1] for tool in tools.tools if tool.name.startswith(f"memory__{index_id}__")}
            texts = [json.dumps([tool.model_dump() for tool in tools.tools]), found.content[-1].text, written.content[-1].text]
            if listed != offered:
                failures.append(f"{attacker}: offered {sorted(listed)} (expected {sorted(offered)})")
            seen = None if found.is_error else _found(texts[1], records)
            if seen != finds:
                failures.append(f"{attacker}: search found {seen} (expected {finds})")
            if written.is_error == kept:
                failures.append(f"{attacker}: write {'refused' if written.is_error else 'kept'}: {texts[2][:200]}")
            if kept and not written.is_error:
                new = MemoryRecord.objects.unscoped().get(pk=_payload(written)["memory_id"])
                if (new.index_id, new.subject) != (index_id, subject or ("bob" if attacker == "token_of_bob" else None)):
                    failures.append(f"{attacker}: wrote {new.index_id} for {new.subject}")
        may_see = finds or set()
        leaked = sorted(who for who in records if who not in may_see and any(who in _found(text, records) for text in texts))
        if leaked:
            failures.append(f"{attacker}: leaked the records of {leaked}")
        anna_after, all_after = _state(index_id)
        if (anna_after != anna_before and attacker != "owner") or (not kept and all_after != all_before):
            failures.append(f"{attacker}: changed the victim's records")

    assert tried == 3 * len(EXPECTED)
    assert not failures, "\n".join(failures)


def test_over_mcp_a_narrow_key_reaches_nothing_of_an_index_another_keys_thread_read(site, tenant, fake_model):
    """The matrix's "narrow key reads another key's thread" case over MCP: the owner's turn searched
    index A1 and its thread keeps an A1 record's text; a key whose policy names only A2 is
    offered A2's tools only, its call of A1's search is refused, and nothing it gets holds the text."""
    a1_text = "cnry-a1-mcp Zoe woont in Haarlem"
    _turn, a2 = owner_turn_that_read_a1(tenant, fake_model, text=a1_text)
    a1_search = f"memory__{tenant.index.id}__search"
    _key, narrow = make_key(tenant.organisation, name="narrow", read=(a2.id,), write=(a2.id,), memory=WRITING)

    async def work(session):
        tools = await session.list_tools()
        refused = await session.call_tool(a1_search, {"query": "Haarlem"})
        own = await session.call_tool(f"memory__{a2.id}__search", {"query": "Haarlem"})
        return tools, refused, own

    _initialised, (tools, refused, own) = _session(site, narrow, work, subject="zoe")

    assert {tool.name for tool in tools.tools} == {f"memory__{a2.id}__search", f"memory__{a2.id}__write"}
    assert refused.is_error and not own.is_error
    everything = json.dumps([tool.model_dump() for tool in tools.tools]) + refused.content[-1].text + own.content[-1].text
    assert a1_text not in everything
