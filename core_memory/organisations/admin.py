"""The administrator's own organisation. Its rate limit is edited here, through the same service
(and audit) as `PATCH /v1/tenants/{org}`; its other settings are shown and change through
that PATCH. Organisations are made with `createorg`."""
from django import forms
from django.conf import settings
from django.contrib import admin
from django.utils.translation import gettext_lazy as _

from core_memory.base.console.pages import OrganisationScopedAdmin
from core_memory.organisations.models import Organisation
from core_memory.organisations.services import UPDATABLE_FIELDS, organisation_update

# The settings the console edits; the others are shown only.
EDITABLE_FIELDS = ("rate_limit_per_minute",)
# Each list of offered models shown as the API answers it.
OFFERED_SHOWN = {
    "offered_models": "offered",
    "offered_embedding_models": "offered_embedding",
    "offered_rerank_models": "offered_rerank",
}


class OrganisationForm(forms.ModelForm):
    class Meta:
        model = Organisation
        fields = EDITABLE_FIELDS

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["rate_limit_per_minute"].help_text = _(
            "The requests per minute each key may make, sustained; after a quiet moment a key may send up to "
            "%(burst)s at once (or a minute's worth, when that is less). Empty: the server's %(default)s."
        ) % {"burst": settings.CORE_RATE_LIMIT_BURST, "default": settings.CORE_RATE_LIMIT_PER_MINUTE}


@admin.register(Organisation)
class OrganisationAdmin(OrganisationScopedAdmin):
    form = OrganisationForm
    list_display = ("name", "id", "timezone", "capabilities", "rate_limit", "audit_retention_days", "created")
    # Offered models as the API offers them: none stored means every configured model.
    fields = ("id", *(OFFERED_SHOWN.get(name, name) for name in UPDATABLE_FIELDS), "created")
    readonly_fields = tuple(name for name in fields if name not in EDITABLE_FIELDS)

    def has_add_permission(self, request):
        return False  # `createorg` makes organisations

    def has_delete_permission(self, request, obj=None):
        return False

    @staticmethod
    def _offered(ids: list[str], chosen: list[str] | None) -> str:
        offered = ", ".join(ids) or "—"
        if chosen is None:
            return _("%(models)s (every configured model)") % {"models": offered}
        return offered

    @admin.display(description=_("offered models"))
    def offered(self, organisation: Organisation) -> str:
        return self._offered(organisation.offered_model_ids(), organisation.offered_models)

    @admin.display(description=_("offered embedding models"))
    def offered_embedding(self, organisation: Organisation) -> str:
        return self._offered(organisation.offered_embedding_model_ids(), organisation.offered_embedding_models)

    @admin.display(description=_("offered rerank models"))
    def offered_rerank(self, organisation: Organisation) -> str:
        return self._offered(organisation.offered_rerank_model_ids(), organisation.offered_rerank_models)

    @admin.display(description=_("rate limit per key (requests per minute)"), ordering="rate_limit_per_minute")
    def rate_limit(self, organisation: Organisation) -> str:
        if organisation.rate_limit_per_minute is None:
            return _("%(limit)s (the server's)") % {"limit": organisation.key_rate_limit_per_minute()}
        return str(organisation.rate_limit_per_minute)

    def save_model(self, request, obj, form, change):
        changes = {name: form.cleaned_data[name] for name in EDITABLE_FIELDS if name in form.changed_data}
        # The form checked the bounds with the model's own validators, as the service's full_clean does.
        updated = organisation_update(organisation=obj, actor=self.actor(request), changes=changes)
        obj.updated_at = updated.updated_at
