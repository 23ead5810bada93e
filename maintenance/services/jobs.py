"""Running one maintenance job (R-9.2–R-9.4, R-13, R-12.4), as extraction runs a window.

1. Claim: a conditional UPDATE moves the job to `running` with a fresh token and a lease, if
   it is queued or its last claim ran out. Whoever does not win leaves it alone.
2. Check what would make asking pointless or forbidden before paying for it: its analysis
   still on, its person's rules (R-9.3: nothing is sent for her), its records still as they
   were planned, the helper model, the organisation's monthly limit (`parked`, R-8.9).
3. Ask the helper model — outside any transaction — and read its answer whole; a bad answer
   fails the job with `invalid_model_output` before anything is written.
4. Write: in one transaction that first locks the job by its token, the kind's writer writes
   (marks, a lesson, proposals, and what it judged), and the job becomes `done`. A worker
   killed before this commits wrote nothing; one whose claim ran out finds its token gone and
   writes nothing (another worker has the job).
"""
from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from core_memory.base.errors import ApplicationError, Conflict, NotFound
from core_memory.base.tenancy import organisation_id_of
from core_memory.base.work import run_counted, work_claim, work_locked
from core_memory.llm.metering import token_limit_reached
from core_memory.llm.protocol import ProviderError, TokenCount
from core_memory.llm.registry import helper_model_get
from core_memory.llm.structured import INVALID_MODEL_OUTPUT, InvalidModelOutput, structured_completion
from core_memory.organisations.models import Organisation
from maintenance.models import MaintenanceJob, MaintenanceRun
from maintenance.selectors import Analyses, person_may_be_read, store_analyses
from maintenance.services.contested import contradictions_prepare, contradictions_write
from maintenance.services.lessons import store_lesson_prepare, store_lesson_write
from maintenance.services.planning import MAX_ATTEMPTS, job_lease
from maintenance.services.promotion import promotion_prepare, promotion_write
from maintenance.services.work import JobCancelled, JobFailed, Prepared
from stores.models import MemoryStore

logger = logging.getLogger(__name__)

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


def _skipped(job_id: str, job: MaintenanceJob | None = None) -> JobOutcome:
    return JobOutcome(job_id=job_id, index_id=job.index_id if job else None, kind=job.kind if job else None, status="skipped")


def _claim(*, job_id: str, clock: datetime) -> uuid.UUID | None:
    """The conditional UPDATE that makes this attempt the job's only runner, or None."""
    return work_claim(MaintenanceJob.objects.unscoped(), pk=job_id, clock=clock, lease=job_lease())


def _run_count(*, run_id: str | None, organisation_id: str, now: datetime, done: int = 1, **counts: int) -> None:
    """`done` of the run's jobs are finished: its counters rise, and its last job closes it."""
    run_counted(MaintenanceRun.objects.for_organisation(organisation_id), run_id=run_id, now=now, done=done, **counts)


def _locked(*, job: MaintenanceJob, token: uuid.UUID) -> MaintenanceJob | None:
    """The job, locked, while this attempt's claim holds; None when it is no longer ours."""
    return work_locked(MaintenanceJob.objects.for_organisation(job.organisation_id), pk=job.pk, token=token)


def _finish(job: MaintenanceJob, *, status: str, usage: TokenCount, calls: int, now: datetime, code: str = "", message: str = "", written: int = 0) -> None:
    job.status = status
    job.error_code = code
    job.error_message = message[:500]
    job.written = written
    job.model_calls += calls
    job.input_tokens += usage.input_tokens
    job.output_tokens += usage.output_tokens
    job.claim_token = job.lease_until = None
    job.finished_at = timezone.now()
    job.save()
    counts = {"errors": int(status == Status.FAILED), "parked": int(status == Status.PARKED)}
    if written:
        counts[RUN_COUNTERS[job.kind]] = written
    _run_count(run_id=job.run_id, organisation_id=job.organisation_id, now=now, **counts)


@transaction.atomic(durable=True)
def _job_close(
    *, job: MaintenanceJob, token: uuid.UUID, status: str, usage: TokenCount, calls: int, now: datetime, code: str = "", message: str = ""
) -> bool:
    """A job that ends without writing; False when it is no longer this attempt's."""
    locked = _locked(job=job, token=token)
    if locked is None:
        return False
    _finish(locked, status=status, usage=usage, calls=calls, now=now, code=code, message=message)
    return True


def _analysis_on(*, kind: str, analyses: Analyses) -> bool:
    return {Kind.CONTRADICTIONS: analyses.contested, Kind.STORE_LESSON: analyses.lessons, Kind.PROMOTION: analyses.promotion}[kind]


def _prepare(*, job: MaintenanceJob, analyses: Analyses) -> Prepared:
    if not _analysis_on(kind=job.kind, analyses=analyses):
        raise JobCancelled("analysis_off")
    if not person_may_be_read(organisation_id=job.organisation_id, subject=job.subject):
        raise JobCancelled("helper_model_may_not_read")
    if job.kind == Kind.CONTRADICTIONS:
        return contradictions_prepare(job=job)
    if job.kind == Kind.STORE_LESSON:
        return store_lesson_prepare(job=job, min_episodes=analyses.min_episodes)
    return promotion_prepare(job=job)


def _ask(*, organisation: Organisation, prepared: Prepared, now: datetime):
    model = helper_model_get(organisation=organisation)
    if model is None:
        raise JobFailed("model_unavailable", "The organisation has no helper model on offer.")
    asking = prepared.asking
    try:
        answer = structured_completion(
            organisation=organisation, model=model, name=asking.name, schema=asking.schema, messages=asking.messages, now=now
        )
    except InvalidModelOutput as error:
        raise JobFailed(INVALID_MODEL_OUTPUT, error.message, usage=error.usage) from error
    except ProviderError as error:
        raise JobFailed("model_error", f"{error.code}: {error.message}") from error
    try:
        return asking.read(asking.placeholders.restore(answer.data)), answer.usage
    except InvalidModelOutput as error:
        raise JobFailed(INVALID_MODEL_OUTPUT, error.message, usage=answer.usage) from error


def _write(*, job: MaintenanceJob, prepared: Prepared, answer, now: datetime) -> int:
    if job.kind == Kind.CONTRADICTIONS:
        return contradictions_write(job=job, prepared=prepared, answer=answer)
    if job.kind == Kind.STORE_LESSON:
        return store_lesson_write(job=job, prepared=prepared, answer=answer, now=now)
    return promotion_write(job=job, prepared=prepared, answer=answer, now=now)


@transaction.atomic(durable=True)
def _answer_write(*, job: MaintenanceJob, token: uuid.UUID, prepared: Prepared, answer, usage: TokenCount, calls: int, now: datetime) -> int | None:
    """The answer's writes and the job's `done`, in one transaction; None, with nothing written,
    when the job is no longer this attempt's."""
    locked = _locked(job=job, token=token)
    if locked is None:
        return None
    written = _write(job=locked, prepared=prepared, answer=answer, now=now) if prepared.asking is not None else 0
    _finish(locked, status=Status.DONE, usage=usage, calls=calls, now=now, written=written)
    return written


def maintenance_job_run(*, job_id: str, now: datetime | None = None) -> JobOutcome:
    """Runs one job if it is there to be run (the module's docstring). Safe to call for any job
    any number of times, from any number of workers: only a claim runs it."""
    clock = timezone.now()
    now = now or clock
    job = MaintenanceJob.objects.unscoped().select_related("index__organisation").filter(pk=job_id).first()
    if job is None or job.status not in (Status.QUEUED, Status.RUNNING):
        return _skipped(job_id, job)
    organisation = job.index.organisation
    store = MemoryStore.objects.for_organisation(organisation).filter(index_id=job.index_id, index__deleted_at__isnull=True).first()
    analyses = store_analyses(store=store, organisation=organisation) if store is not None else None
    if analyses is None or not analyses.contested:
        # It waits, queued, until the store's maintenance is on again.
        return _skipped(job_id, job)
    token = _claim(job_id=job_id, clock=clock)
    if token is None:
        return _skipped(job_id, job)
    job.refresh_from_db(fields=["attempts", "run"])
    usage, calls, status = TokenCount(), 0, Status.DONE
    try:
        if job.attempts > MAX_ATTEMPTS:
            raise JobFailed("attempts_exhausted", f"The job was claimed {MAX_ATTEMPTS} times without finishing.")
        prepared = _prepare(job=job, analyses=analyses)
        answer = None
        if prepared.asking is not None:
            if token_limit_reached(organisation=organisation, at=now):
                status = Status.PARKED
                raise JobCancelled("token_limit_reached")
            calls = 1
            answer, usage = _ask(organisation=organisation, prepared=prepared, now=now)
        try:
            written = _answer_write(job=job, token=token, prepared=prepared, answer=answer, usage=usage, calls=calls, now=now)
        except Conflict as error:
            raise JobFailed("write_conflict", error.message, usage=usage) from error
        except NotFound as error:
            raise JobFailed("objects_missing", error.message, usage=usage) from error
        except ApplicationError as error:
            # A service refused a value of the answer: the answer was not of the shape.
            raise JobFailed(INVALID_MODEL_OUTPUT, error.message, usage=usage) from error
    except JobCancelled as stop:
        status = status if status == Status.PARKED else Status.CANCELLED
        if not _job_close(job=job, token=token, status=status, usage=usage, calls=0, now=now, code=stop.code):
            return _skipped(job_id, job)
        logger.info("maintenance.job.stopped", extra={"job": job_id, "status": status, "code": stop.code})
        return JobOutcome(job_id=job_id, index_id=job.index_id, kind=job.kind, status=status, error_code=stop.code)
    except JobFailed as failure:
        calls = calls if failure.code in (INVALID_MODEL_OUTPUT, "model_error") else 0
        closed = _job_close(
            job=job, token=token, status=Status.FAILED, usage=failure.usage, calls=calls, now=now, code=failure.code, message=failure.message
        )
        logger.warning("maintenance.job.failed", extra={"job": job_id, "kind": job.kind, "code": failure.code})
        if not closed:
            return _skipped(job_id, job)
        return JobOutcome(
            job_id=job_id, index_id=job.index_id, kind=job.kind, status=Status.FAILED, error_code=failure.code, model_calls=calls
        )
    if written is None:
        logger.warning("maintenance.job.claim_lost", extra={"job": job_id})
        return _skipped(job_id, job)
    logger.info("maintenance.job.done", extra={"job": job_id, "kind": job.kind, "written": written})
    return JobOutcome(job_id=job_id, index_id=job.index_id, kind=job.kind, status=Status.DONE, written=written, model_calls=calls)


def person_jobs_erase(*, organisation: Organisation | str, subject: str) -> int:
    """Removes the jobs about her records (part of erasing her, core_memory.flows.erasure);
    answers how many. A job being written holds its row, so this waits for it. A run that was
    waiting for one of them no longer does."""
    organisation_id = organisation_id_of(organisation)
    jobs = MaintenanceJob.objects.for_organisation(organisation_id).filter(subject=subject)
    unfinished: dict[str, int] = {}
    for run_id in jobs.filter(status__in=[Status.QUEUED, Status.RUNNING], run__isnull=False).values_list("run_id", flat=True):
        unfinished[run_id] = unfinished.get(run_id, 0) + 1
    _, deleted = jobs.delete()
    for run_id, count in unfinished.items():
        _run_count(run_id=run_id, organisation_id=organisation_id, now=timezone.now(), done=count)
    return deleted.get(MaintenanceJob._meta.label, 0)
