"""The audit log in the console: read-only for everyone, superusers included (R-10.3, R-11.1)."""
from django.contrib import admin

from audit.models import AuditEvent
from core_memory.console.admin import ReadOnlyScopedAdmin


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyScopedAdmin):
    list_display = ("at", "action", "actor", "target")
    list_filter = ("action",)
    search_fields = ("action", "actor", "target")
    date_hierarchy = "at"
    # The organisation's id, not the organisation: an event may outlive it (no FK constraint).
    fields = ("id", "organisation_id", "at", "actor", "action", "target", "details")
    readonly_fields = fields
