from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class CoreApiConfig(AppConfig):
    name = "core_memory.api"
    label = "core_api"
    verbose_name = _("API")

    def ready(self) -> None:
        from core_memory.api import schema  # noqa: F401 — registers the OpenAPI authentication extension
