"""Maintenance's Celery tasks (R-1.4, R-9.1, R-12.4): a dispatcher on beat, one task per job.

A job's task may be delivered twice (`acks_late`: a message whose worker died is delivered
again), run twice, or race another worker: only the attempt that claims the job runs it
(maintenance.services.jobs). Its hard time limit is the claim's lease, so no worker still
holds a job that the dispatcher hands out again.
"""
from celery import shared_task
from django.conf import settings

from core_memory.base.work import durable_task_options
from maintenance.services.jobs import maintenance_job_run
from maintenance.services.planning import maintenance_dispatch

JOB_SECONDS = settings.CORE_MAINTENANCE_JOB_SECONDS


@shared_task(**durable_task_options(JOB_SECONDS))
def maintenance_job_task(job_id: str) -> dict:
    outcome = maintenance_job_run(job_id=job_id)
    return {"job_id": job_id, "status": outcome.status, "error_code": outcome.error_code}


@shared_task(acks_late=True, autoretry_for=(Exception,), max_retries=3, retry_backoff=True, soft_time_limit=240, time_limit=300)
def maintenance_dispatch_task() -> dict:
    dispatch = maintenance_dispatch()
    # The dispatch committed its jobs before returning: a worker that takes one finds it.
    for job_id in dispatch.job_ids:
        maintenance_job_task.delay(job_id)
    return {"runs": sum(plan.run_id is not None for plan in dispatch.plans), "jobs": len(dispatch.job_ids)}
