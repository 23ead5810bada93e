from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ThreadsConfig(AppConfig):
    name = "core_memory.threads"
    label = "threads"
    verbose_name = _("Threads")
