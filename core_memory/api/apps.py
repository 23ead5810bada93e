from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class CoreApiConfig(AppConfig):
    name = "core_memory.api"
    label = "core_api"
    verbose_name = _("API")
