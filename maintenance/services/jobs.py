"""Running one maintenance job, as the durable-work runner runs every unit
(core_memory.base.work.runner: claim, prepare, ask, write). What is maintenance's own:

- Prepare: its analysis still on, its person's rules (nothing is sent for a person whose rules
  forbid the helper model to read her), its records still as they were planned; the kind's
  preparer says what it will ask. A job no longer wanted is `cancelled`.
- Ask the organisation's helper model; a job parked at the monthly limit keeps the code
  `token_limit_reached`.
- Write: the kind's writer writes (marks, a lesson, proposals, and what it judged), and the
  job becomes `done`, counting what it wrote into its run's counter for the kind.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone

from core_memory.base.callers import Caller
from core_memory.base.errors import ApplicationError, Conflict, NotFound
from core_memory.base.work.claims import CANCELLED, work_erased
from core_memory.base.work.runner import End, WorkFailed, WorkRunner, WorkStopped
from core_memory.llm.metering import token_limit_reached
from core_memory.llm.registry import helper_model_get
from core_memory.llm.structured import INVALID_MODEL_OUTPUT, UnusableAnswer, structured_answer_read, structured_completion
from maintenance.callers import maintenance_caller
from maintenance.models import MaintenanceJob, MaintenanceRun
from maintenance.selectors import Analyses, person_may_be_read, store_analyses
from maintenance.services.contested import contradictions_prepare, contradictions_write
from maintenance.services.lessons import store_lesson_prepare, store_lesson_write
from maintenance.services.planning import MAX_ATTEMPTS, job_lease
from maintenance.services.promotion import promotion_prepare, promotion_write
from maintenance.services.work import Prepared
from stores.models import MemoryStore

Kind = MaintenanceJob.Kind
Status = MaintenanceJob.Status
# Which run counter a finished job's `written` goes into.
RUN_COUNTERS = {Kind.CONTRADICTIONS: "contested", Kind.STORE_LESSON: "lessons", Kind.PROMOTION: "proposals"}


@dataclass(frozen=True)
class JobOutcome:
    """What became of one attempt to run a job. `status` is the job's status after it, or
    `skipped` when this attempt did not claim it (done, taken, or its store's maintenance off)."""

    job_id: str
    index_id: str | None
    kind: str | None
    status: str
    error_code: str = ""
    written: int = 0
    model_calls: int = 0


class JobRunner(WorkRunner):
    unit_model = MaintenanceJob
    run_model = MaintenanceRun
    noun = "job"
    events = "maintenance.job"
    done_status = Status.DONE
    max_attempts = MAX_ATTEMPTS
    related = ("index__organisation",)
    parked_code = "token_limit_reached"
    write_failures = ((Conflict, "write_conflict"), (NotFound, "objects_missing"), (ApplicationError, INVALID_MODEL_OUTPUT))

    def lease(self) -> timedelta:
        return job_lease()

    def owner(self, unit: MaintenanceJob, now: datetime) -> Analyses | None:
        """The store's analyses while its maintenance is on."""
        organisation = unit.index.organisation
        stores = MemoryStore.objects.for_organisation(organisation)
        store = stores.filter(index_id=unit.index_id, index__deleted_at__isnull=True).first()
        analyses = store_analyses(store=store, organisation=organisation) if store is not None else None
        return analyses if analyses is not None and analyses.contested else None

    def prepare(self, unit: MaintenanceJob, owner: Analyses, now: datetime) -> Prepared:
        on = {Kind.CONTRADICTIONS: owner.contested, Kind.STORE_LESSON: owner.lessons, Kind.PROMOTION: owner.promotion}
        if not on[unit.kind]:
            raise WorkStopped(CANCELLED, "analysis_off")
        if not person_may_be_read(caller=maintenance_caller(unit.organisation_id), subject=unit.subject):
            raise WorkStopped(CANCELLED, "helper_model_may_not_read")
        if unit.kind == Kind.CONTRADICTIONS:
            return contradictions_prepare(job=unit)
        if unit.kind == Kind.STORE_LESSON:
            return store_lesson_prepare(job=unit, min_episodes=owner.min_episodes)
        return promotion_prepare(job=unit)

    def asks(self, prepared: Prepared) -> bool:
        return prepared.asking is not None

    def limit_reached(self, unit: MaintenanceJob, owner: Analyses, now: datetime) -> bool:
        return token_limit_reached(organisation=unit.index.organisation, at=now)

    def ask(self, unit: MaintenanceJob, owner: Analyses, prepared: Prepared, now: datetime):
        organisation = unit.index.organisation
        model = helper_model_get(organisation=organisation)
        if model is None:
            raise WorkFailed("model_unavailable", "The organisation has no helper model on offer.")
        asking = prepared.asking
        try:
            return structured_answer_read(
                complete=structured_completion,
                read=asking.read,
                placeholders=asking.placeholders,
                organisation=organisation,
                model=model,
                name=asking.name,
                schema=asking.schema,
                messages=asking.messages,
                now=now,
            )
        except UnusableAnswer as error:
            raise WorkFailed(error.code, error.message, usage=error.usage) from error

    def write(self, unit: MaintenanceJob, prepared: Prepared, answer, now: datetime) -> Mapping[str, int]:
        if unit.kind == Kind.CONTRADICTIONS:
            written = contradictions_write(job=unit, prepared=prepared, answer=answer)
        elif unit.kind == Kind.STORE_LESSON:
            written = store_lesson_write(job=unit, prepared=prepared, answer=answer, now=now)
        else:
            written = promotion_write(job=unit, prepared=prepared, answer=answer, now=now)
        return {"written": written}

    def counted(self, unit: MaintenanceJob, end: End) -> None:
        super().counted(unit, end)
        unit.model_calls += end.calls

    def run_counts(self, unit: MaintenanceJob, end: End) -> Mapping[str, int]:
        written = end.counts.get("written", 0)
        return {RUN_COUNTERS[unit.kind]: written} if written else {}

    def outcome(self, unit_id: str, unit: MaintenanceJob | None, end: End | None) -> JobOutcome:
        index_id, kind = (unit.index_id, unit.kind) if unit is not None else (None, None)
        if end is None:
            return JobOutcome(job_id=unit_id, index_id=index_id, kind=kind, status="skipped")
        return JobOutcome(
            job_id=unit_id,
            index_id=index_id,
            kind=kind,
            status=end.status,
            error_code=end.code,
            written=end.counts.get("written", 0),
            model_calls=end.calls,
        )


RUNNER = JobRunner()


def maintenance_job_run(*, job_id: str, now: datetime | None = None) -> JobOutcome:
    """Runs one job if it is there to be run (the module's docstring). Safe to call for any job
    any number of times, from any number of workers: only a claim runs it."""
    return RUNNER.run(unit_id=job_id, now=now)


def person_jobs_erase(*, caller: Caller, subject: str) -> int:
    """Removes the jobs about her records (part of erasing her, core_memory.flows.erasure);
    answers how many. A job being written holds its row, so this waits for it. A run that was
    waiting for one of them no longer does."""
    jobs = MaintenanceJob.objects.for_organisation(caller.organisation_id).filter(subject=subject)
    return work_erased(jobs, runs=MaintenanceRun.objects.for_organisation(caller.organisation_id), now=timezone.now())
