import os

from celery import Celery
from celery.signals import after_setup_logger, after_setup_task_logger, before_task_publish, task_postrun, task_prerun, worker_init, worker_process_init

from core_memory.base.telemetry.logs import log_lines_configure
from core_memory.base.telemetry.tasks import task_context_begin, task_context_end, task_headers_add

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "core_memory.settings")

app = Celery("core_memory")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_init.connect
def _embedding_storage_check(**kwargs) -> None:
    """A worker, like the web application, refuses to start with an index that embeds and
    nowhere to keep vectors (memory.embedding.storage)."""
    # Imported here: this module is loaded with the settings, before Django's apps are ready.
    from django.core.exceptions import ImproperlyConfigured

    from memory.embedding.storage import embedding_storage_check

    try:
        embedding_storage_check()
    except ImproperlyConfigured as error:
        # Celery logs and ignores an Exception from a signal handler; SystemExit stops the worker.
        raise SystemExit(f"ImproperlyConfigured: {error}") from error


@worker_process_init.connect
def _tracing_configure(**kwargs) -> None:
    """Each pool process traces when the OTEL_* variables name an exporter (after the fork: the
    exporter's thread does not survive one)."""
    from core_memory.base.telemetry.tracing import tracing_configure

    tracing_configure()


@before_task_publish.connect
def _request_context_into_headers(headers=None, **kwargs) -> None:
    if headers is not None:
        task_headers_add(headers)


@task_prerun.connect
def _request_context_begin(task=None, **kwargs) -> None:
    task_context_begin(task)


@task_postrun.connect
def _request_context_end(task=None, **kwargs) -> None:
    task_context_end(task)


@after_setup_logger.connect
@after_setup_task_logger.connect
def _log_lines_as_configured(logger=None, **kwargs) -> None:
    """The worker's lines carry the request's context, as JSON lines when CORE_LOG_FORMAT says
    so (Celery's own format otherwise)."""
    from django.conf import settings

    log_lines_configure(logger, json_lines=settings.CORE_LOG_FORMAT == "json")
