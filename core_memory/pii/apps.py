from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class PiiConfig(AppConfig):
    name = "core_memory.pii"
    label = "pii"
    verbose_name = _("Personal data")
