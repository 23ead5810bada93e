"""django.contrib.admin on the console's own site (core_memory.console.site), so that every
`@admin.register` lands there. Apart from `apps.py`, which names the console app itself."""
from django.contrib.admin.apps import AdminConfig


class ConsoleAdminConfig(AdminConfig):
    default_site = "core_memory.console.site.ConsoleSite"
