"""What the three kinds of maintenance job share: how a job says what it will ask the helper
model, and how it is queued. (How it fails or stops without writing is every unit's:
core_memory.base.work.runner.)"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from core_memory.base.callers import Caller
from core_memory.pii.placeholders import Placeholders
from maintenance.models import MaintenanceJob

T = TypeVar("T")


@dataclass(frozen=True)
class Asking:
    """One call of the helper model: the answer's shape (`name`, `schema`), the messages,
    and the reader that turns the answer (restored with `placeholders`) into the job's values."""

    name: str
    schema: dict
    messages: list[dict]
    read: Callable[[dict], Any]
    placeholders: Placeholders = field(default_factory=Placeholders)


@dataclass
class Prepared:
    """What a job asks (None: nothing is left worth asking, the job is done without a call) and
    what its writer needs besides the answer."""

    asking: Asking | None
    context: Any = None


def stamp(value) -> str:
    """A record's `updated_at` as a job's payload keeps it."""
    return value.isoformat()


def chunks(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    """`items` in slices of at most `size`: what one job's single request shows."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def job_queued(*, caller: Caller, index_id: str, kind: str, subject: str | None, payload: dict, clock: datetime) -> MaintenanceJob:
    """A new job (saved with its run's others), about `subject`'s records (None: the shared ones)."""
    return MaintenanceJob(organisation_id=caller.organisation_id, index_id=index_id, kind=kind, subject=subject, payload=payload, queued_at=clock)
