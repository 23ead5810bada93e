"""The administrator's own organisation, shown read-only; its settings change through
`PATCH /v1/tenants/{org}` (R-3.1), organisations are made with `createorg` (R-1.3)."""
from django.contrib import admin

from core_memory.console.admin import ReadOnlyScopedAdmin
from core_memory.organisations.models import Organisation
from core_memory.organisations.services import UPDATABLE_FIELDS


@admin.register(Organisation)
class OrganisationAdmin(ReadOnlyScopedAdmin):
    list_display = ("name", "id", "timezone", "capabilities", "audit_retention_days", "created")
    fields = ("id", *UPDATABLE_FIELDS, "created")
    readonly_fields = fields
