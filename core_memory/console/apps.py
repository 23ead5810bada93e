from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ConsoleSiteConfig(AppConfig):
    """The console's top floor: its site and dashboard, the pages that span apps, its template
    tags and commands. It holds no model (the console's own, `ConsoleAdministrator`, is the
    ground floor's: core_memory.base.console), so its label is its own."""

    name = "core_memory.console"
    label = "console_site"
    verbose_name = _("Console")
