from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class TurnsConfig(AppConfig):
    name = "core_memory.flows.turns"
    label = "turns"
    verbose_name = _("Turns")
