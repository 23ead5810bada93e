"""Which block governs a turn and what limits it."""
from __future__ import annotations

from dataclasses import dataclass

from core_memory.base.callers import Caller
from core_memory.keys.configuration import injection_block_defaults
from stores.models import KnowledgeIndex, MemoryStore, default_injection
from stores.selectors import index_find_available


@dataclass(frozen=True)
class BlockSettings:
    types: frozenset[str]
    metadata: dict
    min_confidence: float
    limit: int
    budget: int
    organisation_share: float
    rank: str
    episodes_limit: int
    commitments_limit: int

    def names(self, type_name: str) -> bool:
        return not self.types or type_name in self.types


def governing_block(*, caller: Caller, agent_version) -> tuple[dict | None, str | None]:
    """The agent version's block wholesale when it has one, else the caller's key's; none for a
    caller without the `memory` capability."""
    if not caller.may("memory"):
        return None, None
    agent_block = getattr(agent_version, "memory_injection", None) if agent_version is not None else None
    if agent_block is not None:
        return {**injection_block_defaults(), **agent_block}, "agent"
    key_block = (caller.key.memory or {}).get("injection")
    return ({**injection_block_defaults(), **key_block} if key_block is not None else None), "key"


def readable_index(*, caller: Caller, index_id) -> KnowledgeIndex | None:
    """The block's index when the caller may read it; None silently otherwise."""
    if not isinstance(index_id, str) or not caller.may_read(index_id):
        return None
    return index_find_available(caller=caller, index_id=index_id)


def block_settings(*, block: dict, index: KnowledgeIndex) -> BlockSettings:
    try:
        store_injection = {**default_injection(), **index.store.injection}
    except MemoryStore.DoesNotExist:
        store_injection = default_injection()
    budget = int(block["token_budget"])
    if store_injection.get("token_budget") is not None:
        budget = min(budget, int(store_injection["token_budget"]))
    return BlockSettings(
        types=frozenset(block.get("types") or ()),
        metadata=dict(block.get("metadata") or {}),
        min_confidence=float(block.get("min_confidence") or 0.0),
        limit=int(block["limit"]),
        budget=budget,
        organisation_share=float(store_injection["organisation_share"]),
        rank=store_injection["rank"],
        episodes_limit=int(store_injection["episodes_limit"]),
        commitments_limit=int(store_injection["commitments"]["inject_limit"]),
    )
