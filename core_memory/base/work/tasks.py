"""The Celery tasks of a kind of durable work: one task per unit, one dispatcher on beat.

A unit's task may be delivered twice (`acks_late`: a message whose worker died is delivered
again), run twice, or race another worker: only the attempt that claims the unit runs it. Its
hard time limit is the claim's lease, so no worker still holds a unit that the dispatcher
hands out again.
"""
from __future__ import annotations

from collections.abc import Callable

from celery import shared_task

from core_memory.base.work.claims import durable_task_options
from core_memory.base.work.dispatch import Dispatch


def durable_tasks(*, app: str, noun: str, seconds: int, run: Callable, dispatch: Callable[[], Dispatch]):
    """The unit task `<app>.tasks.<app>_<noun>_task(unit_id)` and the dispatcher
    `<app>.tasks.<app>_dispatch_task()` of a kind of work; `run(unit_id=…)` runs one unit and
    `dispatch()` plans and recovers."""

    @shared_task(name=f"{app}.tasks.{app}_{noun}_task", **durable_task_options(seconds))
    def unit_task(unit_id: str) -> dict:
        outcome = run(unit_id=unit_id)
        return {f"{noun}_id": unit_id, "status": outcome.status, "error_code": outcome.error_code}

    @shared_task(
        name=f"{app}.tasks.{app}_dispatch_task",
        acks_late=True,
        autoretry_for=(Exception,),
        max_retries=3,
        retry_backoff=True,
        soft_time_limit=240,
        time_limit=300,
    )
    def dispatch_task() -> dict:
        handed_out = dispatch()
        # The dispatch committed its units before returning: a worker that takes one finds it.
        for unit_id in handed_out.unit_ids:
            unit_task.delay(unit_id)
        return {"runs": sum(plan.run_id is not None for plan in handed_out.plans), f"{noun}s": len(handed_out.unit_ids)}

    return unit_task, dispatch_task
