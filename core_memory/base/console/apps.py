from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ConsoleConfig(AppConfig):
    name = "core_memory.base.console"
    label = "console"
    verbose_name = _("Console")
