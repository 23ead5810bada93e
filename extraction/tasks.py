"""Extraction's Celery tasks: a dispatcher on beat, one task per window
(core_memory.base.work.tasks: only the attempt that claims a window reads it)."""
from django.conf import settings

from core_memory.base.work.tasks import durable_tasks
from extraction.services.planning import extraction_dispatch
from extraction.services.windows import extraction_window_run

WINDOW_SECONDS = settings.CORE_EXTRACTION_WINDOW_SECONDS


def _window_run(*, unit_id: str):
    return extraction_window_run(window_id=unit_id)


extraction_window_task, extraction_dispatch_task = durable_tasks(
    app="extraction", noun="window", seconds=WINDOW_SECONDS, run=_window_run, dispatch=extraction_dispatch
)
