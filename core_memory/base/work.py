"""Durable background work, shared by extraction's windows and maintenance's jobs (R-12.4).

A unit of work is a row with `status` (`queued`, `running`, then its end), `claim_token`,
`lease_until`, `attempts`, `started_at` and `queued_at`, counted into a run row with `pending`
and `finished_at`:

- `work_claim`: the conditional UPDATE that makes one attempt the unit's only runner — it
  moves a queued unit, or a running one whose lease ran out, to `running` with a fresh token.
- `work_locked`: the unit locked by that token inside the write transaction; None when the
  claim is no longer this attempt's (its lease ran out and another took it, or it was erased).
- `work_to_hand_out_again`: units whose claim ran out (their worker died) or that waited
  queued longer than a lease (their message was lost), put back in the queue.
- `run_counted`: a finished unit counts into its run; the last one closes it.
- `durable_task_options`: the Celery options of a unit's task (acks_late, its lease as the
  hard time limit, retries of database errors).
"""
from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from django.db import InterfaceError, OperationalError
from django.db.models import Case, F, Q, QuerySet, Value, When

QUEUED = "queued"
RUNNING = "running"


def work_claim(units: QuerySet, *, pk: str, clock: datetime, lease: timedelta) -> uuid.UUID | None:
    token = uuid.uuid4()
    claimable = Q(status=QUEUED) | Q(status=RUNNING, lease_until__lt=clock)
    claimed = units.filter(claimable, pk=pk).update(
        status=RUNNING, claim_token=token, lease_until=clock + lease, attempts=F("attempts") + 1, started_at=clock
    )
    return token if claimed else None


def work_locked(units: QuerySet, *, pk: str, token: uuid.UUID):
    return units.select_for_update().filter(pk=pk, status=RUNNING, claim_token=token).first()


def work_to_hand_out_again(units: QuerySet, *, clock: datetime, lease: timedelta) -> list[str]:
    """Inside the caller's transaction: the ids of `units` put back in the queue."""
    expired = units.filter(status=RUNNING, lease_until__lt=clock)
    stale = units.filter(status=QUEUED, queued_at__lt=clock - lease)
    unit_ids = list(expired.values_list("pk", flat=True)) + list(stale.values_list("pk", flat=True))
    units.filter(pk__in=unit_ids).update(status=QUEUED, claim_token=None, lease_until=None, queued_at=clock)
    return unit_ids


def run_counted(runs: QuerySet, *, run_id: str | None, now: datetime, done: int = 1, **counts: int) -> None:
    """`done` of the run's units are finished: its counters rise, and its last unit closes it (a
    row update, so units finishing at once never lose a count)."""
    if run_id is None:
        return
    runs.filter(pk=run_id, pending__gte=done).update(
        pending=F("pending") - done,
        finished_at=Case(When(pending=done, then=Value(now)), default=F("finished_at")),
        **{name: F(name) + value for name, value in counts.items() if value},
    )


def durable_task_options(seconds: int) -> dict:
    """A unit's task: delivered again when its worker dies (`acks_late`), killed at its lease
    (so no worker still holds a unit that is handed out again), database errors retried."""
    return {
        "acks_late": True,
        "reject_on_worker_lost": True,
        "autoretry_for": (OperationalError, InterfaceError),
        "max_retries": 3,
        "retry_backoff": True,
        "soft_time_limit": max(1, seconds * 9 // 10),
        "time_limit": seconds,
    }
