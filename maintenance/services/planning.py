"""Planning a store's maintenance run (R-1.4, R-9.1) and handing out jobs left behind.

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
from django.db.models import Q
from django.utils import timezone

from core_memory.base.work import work_to_hand_out_again
from core_memory.llm.metering import token_limit_reached
from core_memory.llm.registry import helper_model_get
from maintenance.models import MaintenanceJob, MaintenanceRun, MaintenanceState
from maintenance.selectors import persons_closed_to_helper, records_changed, store_analyses, stores_due
from maintenance.services.contested import contradiction_jobs_plan
from maintenance.services.lessons import lesson_jobs_plan
from maintenance.services.promotion import promotion_plan
from stores.models import MemoryStore

logger = logging.getLogger(__name__)

OVERLAP = timedelta(minutes=10)
MAX_ATTEMPTS = 3
# Failures worth another attempt at the next run, while attempts last.
TRANSIENT_FAILURES = ("model_error", "write_conflict")


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


def job_lease() -> timedelta:
    """How long a job's claim lasts: its task's hard time limit."""
    return timedelta(seconds=settings.CORE_MAINTENANCE_JOB_SECONDS)


def _since(through: datetime | None) -> datetime | None:
    return None if through is None else through - OVERLAP


@transaction.atomic(durable=True)
def maintenance_store_plan(*, index_id: str, now: datetime | None = None, force: bool = False) -> StorePlan | None:
    """Plans one run of the store of `index_id` when it is due (or `force`). Returns None when it
    is not due. `now` is the clock the run is for (R-1.4's --now: when it is due, the month the
    tokens count in, the records' times); which records changed is read by the real clock."""
    clock = timezone.now()
    now = now or clock
    store = MemoryStore.objects.unscoped().select_related("index__organisation").filter(index_id=index_id, index__deleted_at__isnull=True).first()
    if store is None:
        return StorePlan(index_id=index_id, state="missing")
    organisation = store.index.organisation
    MaintenanceState.objects.get_or_create(index_id=index_id, defaults={"organisation": organisation})
    state = MaintenanceState.objects.for_organisation(organisation).select_for_update().get(index_id=index_id)
    if not force and state.next_run_at is not None and state.next_run_at > now:
        return None
    analyses = store_analyses(store=store, organisation=organisation)
    if not analyses.contested:
        return StorePlan(index_id=index_id, state="off")
    state.next_run_at = now + timedelta(minutes=settings.CORE_MAINTENANCE_MINUTES)

    helper = helper_model_get(organisation=organisation) is not None
    # An analysis that is off forgets how far it read: switched on again, it reads the whole
    # store once, as it did the first time.
    reading = {
        "contested": helper,
        "lessons": analyses.lessons and helper,
        "promotion": analyses.promotion,
    }
    throughs = {name: getattr(state, f"{name}_through") if on else None for name, on in reading.items()}
    sinces = [_since(throughs[name]) for name, on in reading.items() if on]
    earliest = None if any(since is None for since in sinces) else min(sinces, default=None)
    changed = records_changed(organisation_id=organisation.id, index_id=index_id, since=earliest) if sinces else []

    def changed_for(name: str):
        since = _since(throughs[name])
        return changed if since is None else [record for record in changed if record.updated_at > since]

    closed = persons_closed_to_helper(organisation_id=organisation.id, subjects={record.subject for record in changed})
    run = MaintenanceRun.objects.create(organisation=organisation, index_id=index_id, started_at=now, changed=len(changed))
    # Jobs parked at the limit, and those failed for a passing reason, go again first: what they
    # are about is then planned, and not planned twice.
    waiting = MaintenanceJob.objects.for_organisation(organisation).filter(index_id=index_id)
    again = Q(status=MaintenanceJob.Status.FAILED, error_code__in=TRANSIENT_FAILURES, attempts__lt=MAX_ATTEMPTS)
    if not token_limit_reached(organisation=organisation, at=now):
        again |= Q(status=MaintenanceJob.Status.PARKED)
    resumed = list(waiting.filter(again).values_list("pk", flat=True))
    waiting.filter(pk__in=resumed).update(status=MaintenanceJob.Status.QUEUED, run=run, queued_at=clock, error_code="", error_message="")
    jobs: list[MaintenanceJob] = []
    proposals = 0
    if reading["contested"]:
        jobs += contradiction_jobs_plan(
            organisation_id=organisation.id,
            index=store.index,
            changed=changed_for("contested"),
            closed=closed,
            since=_since(throughs["contested"]),
            clock=clock,
        )
    if reading["lessons"]:
        jobs += lesson_jobs_plan(
            organisation_id=organisation.id,
            index_id=index_id,
            changed=changed_for("lessons"),
            closed=closed,
            since=_since(throughs["lessons"]),
            min_episodes=analyses.min_episodes,
            clock=clock,
        )
    if reading["promotion"]:
        # Without a helper model the several-persons analysis still runs; only the model's is left out.
        proposals, promotion_jobs = promotion_plan(
            organisation_id=organisation.id,
            index_id=index_id,
            changed=changed_for("promotion"),
            closed=closed,
            since=_since(throughs["promotion"]),
            clock=clock,
            now=now,
        )
        jobs += promotion_jobs if helper else []
    for job in jobs:
        job.run = run
    MaintenanceJob.objects.bulk_create(jobs)

    for name, on in reading.items():
        setattr(state, f"{name}_through", clock if on else None)
    state.save()
    job_ids = [job.pk for job in jobs] + resumed
    run.jobs = run.pending = len(job_ids)
    run.proposals = proposals
    run.finished_at = None if job_ids else now
    run.save(update_fields=["jobs", "pending", "proposals", "finished_at"])
    logger.info(
        "maintenance.run.planned",
        extra={"index": index_id, "run": run.pk, "changed": len(changed), "jobs": len(job_ids), "resumed": len(resumed), "proposals": proposals},
    )
    return StorePlan(
        index_id=index_id,
        state="planned",
        run_id=run.pk,
        job_ids=job_ids,
        changed=len(changed),
        proposals=proposals,
        analyses={"contested": reading["contested"], "lessons": reading["lessons"], "promotion": reading["promotion"], "helper_model": helper},
    )


@transaction.atomic(durable=True)
def maintenance_jobs_recover(*, index_ids: list[str] | None = None) -> list[str]:
    """Jobs of stores whose maintenance is on (of `index_ids`, or all) to hand out again: those
    whose claim ran out (their worker died or was killed, R-12.4) go back to `queued`; those
    queued longer than a claim lasts (their message was lost) are sent again. A second
    delivery is harmless: only one worker can claim a job."""
    jobs = MaintenanceJob.objects.unscoped().filter(index__store__maintenance__enabled=True, index__deleted_at__isnull=True)
    if index_ids is not None:
        jobs = jobs.filter(index_id__in=index_ids)
    job_ids = work_to_hand_out_again(jobs, clock=timezone.now(), lease=job_lease())
    if job_ids:
        logger.warning("maintenance.jobs.recovered", extra={"jobs": len(job_ids)})
    return job_ids


@dataclass(frozen=True)
class Dispatch:
    """What one dispatch handed out: the stores it planned and the jobs it recovered."""

    plans: list[StorePlan]
    recovered: list[str]

    @property
    def job_ids(self) -> list[str]:
        return [job_id for plan in self.plans for job_id in plan.job_ids] + self.recovered


def maintenance_dispatch(*, now: datetime | None = None, index_ids: list[str] | None = None) -> Dispatch:
    """Plans every due store — or every store of `index_ids`, due or not — and recovers jobs
    left behind (R-1.4: beat and `run_maintenance` both come here). Each store is planned in
    its own transaction."""
    now = now or timezone.now()
    candidates = stores_due(now=now) if index_ids is None else index_ids
    plans = [maintenance_store_plan(index_id=index_id, now=now, force=index_ids is not None) for index_id in candidates]
    return Dispatch(plans=[plan for plan in plans if plan is not None], recovered=maintenance_jobs_recover(index_ids=index_ids))
