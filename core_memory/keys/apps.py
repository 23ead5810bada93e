from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class KeysConfig(AppConfig):
    name = "core_memory.keys"
    label = "keys"
    verbose_name = _("Keys")
