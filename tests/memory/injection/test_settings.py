"""Which block governs a turn and what limits it (memory.injection.settings, R-7.4, R-4.3)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from core_memory.base.callers import Caller
from stores.services import index_delete
from tests.factories import make_index, make_key
from tests.memory.injection.builders import build, injecting_key, record, store_injection, texts

pytestmark = pytest.mark.django_db


def test_the_lower_of_the_store_and_block_budget_applies(tenant):
    """R-4.3: the store's `token_budget` lowers the block's."""
    for number in range(5):
        record(tenant.index, f"fact number {number}", subject="anna")
    key = injecting_key(tenant, token_budget=1000)
    store_injection(tenant.index, token_budget=40)

    result = build(key)

    assert result.trace["estimated_tokens"] == 35  # within the store's 40
    assert result.trace["sections"]["about_this_person"] == 2
    assert result.trace["dropped_by_budget"] == 3


def test_an_agent_block_replaces_the_keys_block_wholesale(tenant):
    """R-7.4: the agent's index, types and limits; nothing from the key's block."""
    billing = make_index(tenant.organisation, name="billing")
    record(tenant.index, "from the key's store", subject="anna")
    record(billing, "billing fact", subject="anna")
    record(billing, "billing preference", type="preference", subject="anna")
    key = injecting_key(tenant, types=["fact"], limit=1)
    agent = SimpleNamespace(memory_injection={"enabled": True, "index_id": billing.id, "types": [], "limit": 20})

    result = build(key, agent_version=agent)

    assert texts(result.text, "about_this_person") == ["billing fact", "billing preference"]
    assert result.trace["source"] == "agent"
    assert result.trace["index_id"] == billing.id


def test_an_agent_block_that_is_disabled_injects_nothing_although_the_key_does(tenant):
    """R-7.4."""
    record(tenant.index, "Anna lives in Delft", subject="anna")
    agent = SimpleNamespace(memory_injection={"enabled": False, "index_id": tenant.index.id})

    result = build(injecting_key(tenant), agent_version=agent)

    assert (result.text, result.record_ids, result.trace["source"]) == ("", [], "agent")


def test_an_agent_without_a_block_uses_the_keys(tenant):
    """R-7.4."""
    record(tenant.index, "Anna lives in Delft", subject="anna")

    result = build(injecting_key(tenant), agent_version=SimpleNamespace(memory_injection=None))

    assert result.trace["source"] == "key"
    assert result.trace["injected"] == 1


@pytest.mark.parametrize("case", ["no_memory_capability", "disabled", "policy_lacks_index", "write_only_policy",
                                  "deleted_index", "other_organisations_index"])
def test_nothing_is_injected_and_nothing_raised_when_the_block_cannot_apply(tenant, other_tenant, case):
    """R-7.4: silently nothing (and no retrieval counted)."""
    elsewhere = make_index(tenant.organisation, name="elsewhere")
    made = record(tenant.index, "Anna lives in Delft", subject="anna")
    record(other_tenant.index, "Other org fact", subject="anna")
    if case == "no_memory_capability":
        key = injecting_key(tenant, capabilities=["knowledge"])
    elif case == "disabled":
        key = injecting_key(tenant, enabled=False)
    elif case == "policy_lacks_index":
        key = injecting_key(tenant, read=[elsewhere.id])
    elif case == "write_only_policy":
        key, _ = make_key(tenant.organisation, read=[], write=[tenant.index.id],
                          memory={"injection": {"enabled": True, "index_id": tenant.index.id}})
    elif case == "deleted_index":
        key = injecting_key(tenant)
        index_delete(caller=Caller.system(organisation_id=tenant.index.organisation_id, actor="test"), index=tenant.index)
    else:
        key = injecting_key(tenant)
        key.memory["injection"]["index_id"] = other_tenant.index.id
        key.save(update_fields=["memory"])

    result = build(key)

    assert (result.text, result.record_ids, result.trace["injected"]) == ("", [], 0)
    made.refresh_from_db()
    assert made.retrieval_count == 0
