"""Counting that records were shown: search hits and an injection block's lines
(memory.retrieval is the one reader that calls it)."""
from __future__ import annotations

from collections.abc import Sequence

from django.db.models import F

from core_memory.base.transactions import lazily_committed
from core_memory.base.callers import Caller
from memory.models import MemoryRecord


def records_retrieved(*, caller: Caller, records: Sequence[MemoryRecord]) -> None:
    """The records were shown to the caller — search hits, an injection block's lines:
    each one's `retrieval_count` rises by one, in SQL with F() so that concurrent readers
    never lose a count, and on the given objects so an answer shows the raised count.
    No history version: a retrieval changes nothing a version records. A count lost in a crash of
    the database server harms nobody, so its commit does not wait for the disk."""
    if not records:
        return
    with lazily_committed():
        MemoryRecord.objects.for_organisation(caller.organisation_id).filter(id__in=[record.id for record in records]).update(
            retrieval_count=F("retrieval_count") + 1
        )
    for record in records:
        record.retrieval_count += 1
