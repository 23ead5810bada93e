from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class OrganisationsConfig(AppConfig):
    name = "core_memory.organisations"
    label = "organisations"
    verbose_name = _("Organisations")
