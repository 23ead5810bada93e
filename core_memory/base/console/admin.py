from django.contrib import admin

from core_memory.base.console.models import ConsoleAdministrator


@admin.register(ConsoleAdministrator)
class ConsoleAdministratorAdmin(admin.ModelAdmin):
    """Superusers bind users to organisations (as `createadmin` does); administrators
    hold no permission on this model (core_memory.console.services.CONSOLE_APP_LABELS)."""

    list_display = ("user", "organisation", "created_at")
    list_select_related = ("user", "organisation")
    raw_id_fields = ("user", "organisation")
