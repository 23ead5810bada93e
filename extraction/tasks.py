"""Extraction's Celery tasks (R-1.4, R-12.4): a dispatcher on beat, one task per window.

A window's task may be delivered twice (`acks_late`: a message whose worker died is
delivered again), run twice, or race another worker: only the attempt that claims the
window reads it (extraction.services.windows). Its hard time limit is the claim's lease,
so no worker still holds a window that the dispatcher hands out again.
"""
from celery import shared_task
from django.conf import settings

from core_memory.base.work import durable_task_options
from extraction.services.planning import extraction_dispatch
from extraction.services.windows import extraction_window_run

WINDOW_SECONDS = settings.CORE_EXTRACTION_WINDOW_SECONDS


@shared_task(**durable_task_options(WINDOW_SECONDS))
def extraction_window_task(window_id: str) -> dict:
    outcome = extraction_window_run(window_id=window_id)
    return {"window_id": window_id, "status": outcome.status, "error_code": outcome.error_code}


@shared_task(acks_late=True, autoretry_for=(Exception,), max_retries=3, retry_backoff=True, soft_time_limit=240, time_limit=300)
def extraction_dispatch_task() -> dict:
    dispatch = extraction_dispatch()
    # The dispatch committed its windows before returning: a worker that takes one finds it.
    for window_id in dispatch.window_ids:
        extraction_window_task.delay(window_id)
    return {"runs": sum(plan.run_id is not None for plan in dispatch.plans), "windows": len(dispatch.window_ids)}
