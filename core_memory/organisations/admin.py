"""The administrator's own organisation, shown read-only; its settings change through
`PATCH /v1/tenants/{org}`, organisations are made with `createorg`."""
from django.contrib import admin
from django.utils.translation import gettext_lazy as _

from core_memory.console.admin import ReadOnlyScopedAdmin
from core_memory.organisations.models import Organisation
from core_memory.organisations.services import UPDATABLE_FIELDS


@admin.register(Organisation)
class OrganisationAdmin(ReadOnlyScopedAdmin):
    list_display = ("name", "id", "timezone", "capabilities", "audit_retention_days", "created")
    # Offered models as the API offers them: none stored means every configured model.
    fields = ("id", *(name if name != "offered_models" else "offered" for name in UPDATABLE_FIELDS), "created")
    readonly_fields = fields

    @admin.display(description=_("offered models"))
    def offered(self, organisation: Organisation) -> str:
        offered = ", ".join(organisation.offered_model_ids()) or "—"
        if organisation.offered_models is None:
            return _("%(models)s (every configured model)") % {"models": offered}
        return offered
