"""Maintenance's Celery tasks: a dispatcher on beat, one task per job
(core_memory.base.work.tasks: only the attempt that claims a job runs it)."""
from datetime import timedelta

from celery import shared_task
from django.conf import settings

from core_memory.base.work.tasks import durable_tasks
from memory.services.expiry import records_expired_end
from maintenance.services.jobs import maintenance_job_run
from maintenance.services.planning import maintenance_dispatch

JOB_SECONDS = settings.CORE_MAINTENANCE_JOB_SECONDS


def _job_run(*, unit_id: str):
    return maintenance_job_run(job_id=unit_id)


maintenance_job_task, maintenance_dispatch_task = durable_tasks(
    app="maintenance", noun="job", seconds=JOB_SECONDS, run=_job_run, dispatch=maintenance_dispatch
)


@shared_task(acks_late=True, max_retries=3, autoretry_for=(Exception,), retry_backoff=True, soft_time_limit=240, time_limit=300)
def records_expired_end_task() -> dict:
    """Ends the records whose `expires_at` passed more than CORE_EXPIRY_GRACE_HOURS ago."""
    return {"ended": records_expired_end(grace=timedelta(hours=settings.CORE_EXPIRY_GRACE_HOURS))}
