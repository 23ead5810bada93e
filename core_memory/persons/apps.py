from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class PersonsConfig(AppConfig):
    name = "core_memory.persons"
    label = "persons"
    verbose_name = _("Persons")
