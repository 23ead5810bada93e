"""The SQL of durable work: who runs a unit, and how a run counts its units.

A unit has `status` (`queued`, `running`, then its end), `claim_token`, `lease_until`,
`attempts`, `started_at` and `queued_at`; its run has `pending` and `finished_at`.

- `work_claim`: the conditional UPDATE that makes one attempt the unit's only runner — it
  moves a queued unit, or a running one whose lease ran out, to `running` with a fresh token.
- `work_locked`: the unit locked by that token inside the write transaction; None when the
  claim is no longer this attempt's (its lease ran out and another took it, or it was erased).
- `work_to_hand_out_again`: units whose claim ran out (their worker died) or that waited
  queued longer than a lease (their message was lost), put back in the queue.
- `work_resumed`: units that waited (parked, or failed for a passing reason) queued again
  under a new run.
- `run_counted`: a finished unit counts into its run; the last one closes it.
- `work_erased`: units deleted with what they are about, their runs no longer waiting.
- `durable_task_options`: the Celery options of a unit's task (acks_late, its lease as the
  hard time limit, retries of database errors).
"""
from __future__ import annotations

import uuid
from collections import Counter
from datetime import datetime, timedelta

from django.db import InterfaceError, OperationalError
from django.db.models import Case, F, Q, QuerySet, Value, When

QUEUED = "queued"
RUNNING = "running"
FAILED = "failed"
# Stopped at the organisation's monthly token limit: queued again by a run under the limit.
PARKED = "parked"
# No longer wanted (what it was about was switched off or closed): it ends without asking.
CANCELLED = "cancelled"


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


def work_resumed(
    waiting: QuerySet, *, run, clock: datetime, again: Q, transient: tuple[str, ...], max_attempts: int, limit_reached: bool
) -> list[str]:
    """Inside the run's planning transaction: the ids of `waiting` units queued again under
    `run` — those matching `again`, those failed with a `transient` code while attempts last,
    and the parked ones once the organisation is under its monthly limit."""
    again |= Q(status=FAILED, error_code__in=transient, attempts__lt=max_attempts)
    if not limit_reached:
        again |= Q(status=PARKED)
    resumed = list(waiting.filter(again).values_list("pk", flat=True))
    waiting.filter(pk__in=resumed).update(status=QUEUED, run=run, queued_at=clock, error_code="", error_message="")
    return resumed


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


def work_erased(units: QuerySet, *, runs: QuerySet, now: datetime) -> int:
    """Deletes `units` (with the person they are about); answers how many. A unit being written
    holds its row, so this waits for it. A run that was waiting for one of them no longer does."""
    unfinished = Counter(units.filter(status__in=[QUEUED, RUNNING], run__isnull=False).values_list("run_id", flat=True))
    _, deleted = units.delete()
    for run_id, count in unfinished.items():
        run_counted(runs, run_id=run_id, now=now, done=count)
    return deleted.get(units.model._meta.label, 0)


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
