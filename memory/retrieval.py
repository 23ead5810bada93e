"""Retrieving records: reading them for someone and counting that they were shown.

A search (the API's route and the search tool) and a turn's memory block read their records
here, and only here does their `retrieval_count` rise (memory.services.retrievals.records_retrieved): no
reader counts for itself, and the readers below (`record_search`, `injection_block_build`)
stay reads, which the speed bench calls without changing a count. What a read cost in chat
model calls (a chat model reranking its candidates) is metered here too, for the same reason.
The reads run on a replica where one is configured and has replayed the caller's writes
(core_memory.base.replicas)."""
from __future__ import annotations

from datetime import datetime

from core_memory.base.replicas import replica_read
from core_memory.base.callers import Caller
from core_memory.llm.metering import token_usage_record
from core_memory.llm.protocol import TokenCount
from core_memory.organisations.models import Organisation
from memory.injection.walk import InjectionResult, injection_block_build
from memory.models import MemoryRecord
from memory.search import SearchFilters, record_search
from memory.search.question import SearchTrace
from memory.services.retrievals import records_retrieved
from stores.models import KnowledgeIndex


def records_search_retrieve(
    *,
    caller: Caller,
    index: KnowledgeIndex,
    query: str,
    filters: SearchFilters = SearchFilters(),
    now: datetime | None = None,
    trace: SearchTrace | None = None,
) -> list[tuple[MemoryRecord, float]]:
    """`record_search`'s hits for the caller's person, best first with their scores, each counted
    as retrieved once; `trace` is told what the search did with the index's models. The chat
    model calls the search made (a chat reranker) are metered."""
    trace = trace if trace is not None else SearchTrace()
    hits = replica_read(
        caller.reader, lambda: record_search(caller=caller, index=index, query=query, filters=filters, now=now, trace=trace)
    )
    records_retrieved(caller=caller, records=[record for record, _score in hits])
    _chat_calls_metered(caller=caller, calls=trace.chat_calls)
    return hits


def injection_block_retrieve(*, caller: Caller, agent_version, topic: str, now: datetime) -> InjectionResult:
    """A turn's memory block for the caller's person (`injection_block_build`), its records
    counted as retrieved."""
    # The turn wrote its thread and its input just before: the block reads records, not those.
    block = replica_read(
        caller.reader,
        lambda: injection_block_build(caller=caller, agent_version=agent_version, topic=topic, now=now),
        after_own_writes=True,
    )
    records_retrieved(caller=caller, records=block.records)
    _chat_calls_metered(caller=caller, calls=block.chat_calls)
    return block


def _chat_calls_metered(*, caller: Caller, calls: list[TokenCount]) -> None:
    """Each chat model call a read made, metered as every chat call is (core_memory.llm.metering)."""
    if not calls:
        return
    organisation = Organisation.objects.get(pk=caller.organisation_id)
    for usage in calls:
        token_usage_record(organisation=organisation, usage=usage)
