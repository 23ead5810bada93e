from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class LlmConfig(AppConfig):
    name = "core_memory.llm"
    label = "llm"
    verbose_name = _("Models")
