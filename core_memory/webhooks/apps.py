from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class WebhooksConfig(AppConfig):
    name = "core_memory.webhooks"
    label = "webhooks"
    verbose_name = _("Webhooks")
