"""A Celery task carries the request that queued it: its id and organisation travel in the
message's headers, with the time it was queued (the queue's oldest task age reads it), and
the worker's log lines while the task runs carry them."""
from __future__ import annotations

import time

from core_memory.base.telemetry.context import organisation_id_var, request_id_from, request_id_var, route_var

REQUEST_ID = "core_request_id"
ORGANISATION_ID = "core_organisation_id"
QUEUED_AT = "core_queued_at"


def task_headers_add(headers: dict) -> None:
    """`before_task_publish`: the queuing request's context, and when it was queued."""
    request_id = request_id_var.get()
    if request_id:
        headers.setdefault(REQUEST_ID, request_id)
    organisation_id = organisation_id_var.get()
    if organisation_id:
        headers.setdefault(ORGANISATION_ID, organisation_id)
    headers.setdefault(QUEUED_AT, time.time())


def task_context_begin(task) -> None:
    """`task_prerun`: the task's log lines carry the queuing request's id (a new one if none queued it)."""
    request = task.request
    if request.is_eager:
        return  # run inside the queuing request (tests, CELERY_TASK_ALWAYS_EAGER): its context holds
    request_id_var.set(request_id_from(getattr(request, REQUEST_ID, None)))
    organisation_id_var.set(getattr(request, ORGANISATION_ID, None))
    route_var.set(f"task:{task.name}")


def task_context_end(task) -> None:
    if task.request.is_eager:
        return
    request_id_var.set(None)
    organisation_id_var.set(None)
    route_var.set(None)
