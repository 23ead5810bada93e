"""Transactions whose commit does not wait for the disk (docs/decisions.md "Commits").

PostgreSQL makes a commit durable by flushing the write-ahead log before it answers: on the
machines we measured, 2–4 ms per commit, more than the rest of a small write. A request
that commits several times need only wait at its last commit before answering: the log is
flushed in order, so that flush makes every earlier commit of the request durable too. The
earlier ones (a turn's opening rows before the model call, an idempotency claim) and writes
whose loss in a crash of the database server is harmless (retrieval counts) commit with
`synchronous_commit` off. Nothing else changes: they are atomic, visible to others at once,
and a crash of the database loses at most the last fraction of a second of them — never one
that a later waiting commit of the same request already answered for.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection, transaction


@contextmanager
def lazily_committed(*, durable: bool = False) -> Iterator[None]:
    """`transaction.atomic()` whose commit does not wait for the log flush; inside a
    transaction already open it is a plain savepoint and the outer commit decides."""
    outermost = not connection.in_atomic_block
    with transaction.atomic(durable=durable):
        if outermost:
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL synchronous_commit TO OFF")
        yield
