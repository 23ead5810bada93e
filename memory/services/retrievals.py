"""Counting that records were shown: search hits and an injection block's lines
(memory.retrieval is the one reader that calls it)."""
from __future__ import annotations

from collections.abc import Sequence

from django.db import connection

from core_memory.base.callers import Caller
from memory.models import MemoryRecord

_TABLE = MemoryRecord._meta.db_table
# One statement, its own transaction: `set_config(..., true)` turns the wait for the disk off for
# this statement's commit only (as `SET LOCAL` would, in the three more round trips of a
# transaction block: BEGIN, SET LOCAL, COMMIT). Counting in SQL, never a count read and written
# back, so that concurrent readers never lose one.
_COUNTED_LAZILY = f"""UPDATE {_TABLE} AS record SET retrieval_count = record.retrieval_count + 1
FROM (SELECT set_config('synchronous_commit', 'off', true)) AS lazily
WHERE record.organisation_id = %s AND record.id = ANY(%s)"""
# Inside a transaction already open: the statement alone, and the outer commit decides.
_COUNTED = f"UPDATE {_TABLE} SET retrieval_count = retrieval_count + 1 WHERE organisation_id = %s AND id = ANY(%s)"


def records_retrieved(*, caller: Caller, records: Sequence[MemoryRecord]) -> None:
    """The records were shown to the caller — search hits, an injection block's lines:
    each one's `retrieval_count` rises by one, in the database and on the given objects so an
    answer shows the raised count. No history version: a retrieval changes nothing a version
    records. A count lost in a crash of the database server harms nobody, so its commit does not
    wait for the disk (docs/decisions.md "Commits")."""
    if not records:
        return
    statement = _COUNTED if connection.in_atomic_block else _COUNTED_LAZILY
    with connection.cursor() as cursor:
        cursor.execute(statement, [caller.organisation_id, [record.id for record in records]])
    for record in records:
        record.retrieval_count += 1
