"""Planning a store's maintenance run, and handing out jobs left behind
(core_memory.base.work.dispatch: beat and `run_maintenance` both come here).

A run is planned under a row lock on the store's `MaintenanceState`, so two dispatchers (or
beat and `run_maintenance`) never plan one store twice. It reads the records changed since each
analysis last read the store — by `updated_at`, through an index, never a scan of the store —
with an overlap of `OVERLAP` behind the last run, so a record written by a transaction that
committed after that run read is not missed (what the overlap reads again is recognised as
already judged, used or proposed, and costs no model call). It queues the jobs, makes the
several-persons proposals (no model call), and moves each analysis's clock, all in one
transaction: a planner that dies leaves nothing half planned.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from core_memory.base.callers import Caller
from core_memory.base.work.claims import work_resumed
from core_memory.base.work.dispatch import Dispatch, Dispatcher
from core_memory.llm.metering import token_limit_reached
from core_memory.llm.registry import helper_model_get
from maintenance.callers import maintenance_caller
from maintenance.models import MaintenanceJob, MaintenanceRun, MaintenanceState
from maintenance.selectors import Analyses, ChangedRecord, persons_closed_to_helper, records_changed, store_analyses, stores_due
from maintenance.services.contested import contradiction_jobs_plan
from maintenance.services.lessons import lesson_jobs_plan
from maintenance.services.promotion import promotion_plan
from stores.models import MemoryStore

logger = logging.getLogger(__name__)

OVERLAP = timedelta(minutes=10)
MAX_ATTEMPTS = 3
# Failures worth another attempt at the next run, while attempts last.
TRANSIENT_FAILURES = ("model_error", "write_conflict")
ANALYSES = ("contested", "lessons", "promotion")


@dataclass(frozen=True)
class StorePlan:
    """What planning one store did. `state`: `planned`, `off` (maintenance disabled) or
    `missing` (no such live store)."""

    index_id: str
    state: str
    run_id: str | None = None
    job_ids: list[str] = field(default_factory=list)
    changed: int = 0
    proposals: int = 0
    analyses: dict = field(default_factory=dict)

    @property
    def unit_ids(self) -> list[str]:
        return self.job_ids


def job_lease() -> timedelta:
    """How long a job's claim lasts: its task's hard time limit."""
    return timedelta(seconds=settings.CORE_MAINTENANCE_JOB_SECONDS)


def _since(through: datetime | None) -> datetime | None:
    return None if through is None else through - OVERLAP


@dataclass(frozen=True)
class _Changes:
    """What one run reads: which analyses read (`reading`), from when each reads (`sinces`,
    None: the whole store), and the records changed since the earliest of them."""

    reading: dict[str, bool]
    sinces: dict[str, datetime | None]
    changed: list[ChangedRecord]

    def changed_for(self, name: str) -> list[ChangedRecord]:
        since = self.sinces[name]
        return self.changed if since is None else [record for record in self.changed if record.updated_at > since]


def _changes_read(*, state: MaintenanceState, analyses: Analyses, helper: bool, caller: Caller) -> _Changes:
    # An analysis that is off forgets how far it read: switched on again, it reads the whole
    # store once, as it did the first time.
    reading = {"contested": helper, "lessons": analyses.lessons and helper, "promotion": analyses.promotion}
    sinces = {name: _since(getattr(state, f"{name}_through")) if on else None for name, on in reading.items()}
    read_from = [sinces[name] for name, on in reading.items() if on]
    earliest = None if any(since is None for since in read_from) else min(read_from, default=None)
    changed = records_changed(caller=caller, index_id=state.index_id, since=earliest) if read_from else []
    return _Changes(reading=reading, sinces=sinces, changed=changed)


def _jobs_planned(
    *, store: MemoryStore, changes: _Changes, analyses: Analyses, helper: bool, clock: datetime, now: datetime
) -> tuple[int, list[MaintenanceJob]]:
    """Inside the run's planning transaction: each analysis's jobs, and the several-persons
    proposals (made here). Returns (proposals made, jobs)."""
    caller, index_id = maintenance_caller(store.index.organisation_id), store.index_id
    closed = persons_closed_to_helper(caller=caller, subjects={record.subject for record in changes.changed})
    common = {"caller": caller, "closed": closed, "clock": clock}
    jobs: list[MaintenanceJob] = []
    proposals = 0
    if changes.reading["contested"]:
        changed, since = changes.changed_for("contested"), changes.sinces["contested"]
        jobs += contradiction_jobs_plan(index=store.index, changed=changed, since=since, **common)
    if changes.reading["lessons"]:
        changed, since = changes.changed_for("lessons"), changes.sinces["lessons"]
        jobs += lesson_jobs_plan(index_id=index_id, changed=changed, since=since, min_episodes=analyses.min_episodes, **common)
    if changes.reading["promotion"]:
        # Without a helper model the several-persons analysis still runs; only the model's is left out.
        changed, since = changes.changed_for("promotion"), changes.sinces["promotion"]
        proposals, promotion_jobs = promotion_plan(index_id=index_id, changed=changed, since=since, now=now, **common)
        jobs += promotion_jobs if helper else []
    return proposals, jobs


def _state_due(*, store: MemoryStore, now: datetime, force: bool) -> MaintenanceState | None:
    """The store's maintenance clock, locked, when it is due (or `force`)."""
    MaintenanceState.objects.get_or_create(index_id=store.index_id, defaults={"organisation": store.index.organisation})
    state = MaintenanceState.objects.for_organisation(store.index.organisation).select_for_update().get(index_id=store.index_id)
    if not force and state.next_run_at is not None and state.next_run_at > now:
        return None
    return state


@transaction.atomic(durable=True)
def maintenance_store_plan(*, index_id: str, now: datetime | None = None, force: bool = False) -> StorePlan | None:
    """Plans one run of the store of `index_id` when it is due (or `force`). Returns None when it
    is not due. `now` is the clock the run is for (the command's --now: when it is due, the month
    the tokens count in, the records' times); which records changed is read by the real clock."""
    clock = timezone.now()
    now = now or clock
    stores = MemoryStore.objects.unscoped().select_related("index__organisation")
    store = stores.filter(index_id=index_id, index__deleted_at__isnull=True).first()
    if store is None:
        return StorePlan(index_id=index_id, state="missing")
    organisation = store.index.organisation
    state = _state_due(store=store, now=now, force=force)
    if state is None:
        return None
    analyses = store_analyses(store=store, organisation=organisation)
    if not analyses.contested:
        return StorePlan(index_id=index_id, state="off")
    state.next_run_at = now + timedelta(minutes=settings.CORE_MAINTENANCE_MINUTES)
    helper = helper_model_get(organisation=organisation) is not None
    changes = _changes_read(state=state, analyses=analyses, helper=helper, caller=maintenance_caller(organisation.id))
    run = MaintenanceRun.objects.create(organisation=organisation, index_id=index_id, started_at=now, changed=len(changes.changed))
    # Jobs parked at the limit, and those failed for a passing reason, go again first: what they
    # are about is then planned, and not planned twice.
    resumed = work_resumed(
        MaintenanceJob.objects.for_organisation(organisation).filter(index_id=index_id),
        run=run,
        clock=clock,
        again=Q(),
        transient=TRANSIENT_FAILURES,
        max_attempts=MAX_ATTEMPTS,
        limit_reached=token_limit_reached(organisation=organisation, at=now),
    )
    proposals, jobs = _jobs_planned(store=store, changes=changes, analyses=analyses, helper=helper, clock=clock, now=now)
    for job in jobs:
        job.run = run
    MaintenanceJob.objects.bulk_create(jobs)
    for name, on in changes.reading.items():
        setattr(state, f"{name}_through", clock if on else None)
    state.save()
    job_ids = [job.pk for job in jobs] + resumed
    run.planned(job_ids, now=now, jobs=len(job_ids), proposals=proposals)
    logger.info(
        "maintenance.run.planned",
        extra={"index": index_id, "run": run.pk, "changed": len(changes.changed), "jobs": len(job_ids), "resumed": len(resumed), "proposals": proposals},
    )
    analyses_read = {**changes.reading, "helper_model": helper}
    return StorePlan(
        index_id=index_id, state="planned", run_id=run.pk, job_ids=job_ids, changed=len(changes.changed), proposals=proposals, analyses=analyses_read
    )


class MaintenanceDispatch(Dispatch):
    @property
    def job_ids(self) -> list[str]:
        return self.unit_ids


class MaintenanceDispatcher(Dispatcher):
    events = "maintenance.jobs"
    dispatch_class = MaintenanceDispatch

    def lease(self) -> timedelta:
        return job_lease()

    def due(self, now: datetime) -> list[str]:
        return stores_due(now=now)

    def plan(self, *, index_id: str, now: datetime, force: bool) -> StorePlan | None:
        return maintenance_store_plan(index_id=index_id, now=now, force=force)

    def recoverable(self, index_ids: list[str] | None) -> QuerySet:
        """Jobs of stores whose maintenance is on."""
        jobs = MaintenanceJob.objects.unscoped().filter(index__store__maintenance__enabled=True, index__deleted_at__isnull=True)
        return jobs if index_ids is None else jobs.filter(index_id__in=index_ids)


DISPATCHER = MaintenanceDispatcher()


def maintenance_jobs_recover(*, index_ids: list[str] | None = None) -> list[str]:
    """Jobs of stores whose maintenance is on (of `index_ids`, or all) to hand out again."""
    return DISPATCHER.recover(index_ids=index_ids)


def maintenance_dispatch(*, now: datetime | None = None, index_ids: list[str] | None = None) -> MaintenanceDispatch:
    """Plans every due store — or every store of `index_ids`, due or not — and recovers jobs left
    behind. Each store is planned in its own transaction."""
    return DISPATCHER.dispatch(now=now, index_ids=index_ids)
