import os

from celery import Celery
from celery.signals import worker_init

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
