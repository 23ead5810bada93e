import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "core_memory.settings")

app = Celery("core_memory")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
