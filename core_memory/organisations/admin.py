"""The administrator's own organisation. Every setting `PATCH /v1/tenants/{org}` lets a management
key change that is the organisation's own — time zone, helper model, monthly token limit, audit
retention, improvements, rate limit — is edited here, through the same service (and audit); a
page first shows what changes and sets it only once confirmed. Its name, capabilities and
offered models are the operator's and shown only. Organisations are made with `createorg`."""
from __future__ import annotations

import zoneinfo

from django import forms
from django.conf import settings
from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.template.response import TemplateResponse
from django.utils.translation import gettext_lazy as _

from core_memory.base.console.pages import OrganisationScopedAdmin
from core_memory.organisations.models import Organisation
from core_memory.organisations.services import UPDATABLE_FIELDS, organisation_update

# The settings the console edits; the others are shown only.
EDITABLE_FIELDS = ("timezone", "helper_model", "monthly_token_limit", "audit_retention_days", "rate_limit_per_minute")
IMPROVEMENTS_FIELD = "improvements_enabled"
CONFIRMED = "confirmed"
# Each list of offered models shown as the API answers it.
OFFERED_SHOWN = {
    "offered_models": "offered",
    "offered_embedding_models": "offered_embedding",
    "offered_rerank_models": "offered_rerank",
}


class OrganisationForm(forms.ModelForm):
    """The API's bounds: an IANA zone, an offered helper model or none, a token limit of 0 or more
    (empty: none), a retention of 1 to 36,500 days, a rate limit within the model's validators."""

    timezone = forms.ChoiceField(label=_("time zone"), help_text=_("Every time in the console and the API's local times are in it."))
    helper_model = forms.ChoiceField(
        label=_("helper model"), required=False, help_text=_("The offered model that writes lessons and analyses; empty: none.")
    )
    monthly_token_limit = forms.IntegerField(
        label=_("monthly token limit"), min_value=0, max_value=2**63 - 1, required=False,
        help_text=_("Tokens the organisation's model calls may use per calendar month; empty: no limit."),
    )
    audit_retention_days = forms.IntegerField(
        label=_("audit retention (days)"), min_value=1, max_value=36_500, help_text=_("How long audit events are kept.")
    )
    improvements_enabled = forms.BooleanField(
        label=_("improvements"), required=False,
        help_text=_("Core may propose shared records and improvements from what it learns (needs the improvements capability)."),
    )

    class Meta:
        model = Organisation
        fields = EDITABLE_FIELDS

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["timezone"].choices = [(zone, zone) for zone in sorted(zoneinfo.available_timezones())]
        offered = self.instance.offered_model_ids() if self.instance.pk else []
        self.fields["helper_model"].choices = [("", _("none")), *((model_id, model_id) for model_id in offered)]
        self.fields[IMPROVEMENTS_FIELD].initial = bool((self.instance.improvements or {}).get("enabled"))
        self.fields["rate_limit_per_minute"].help_text = _(
            "The requests per minute each key may make, sustained; after a quiet moment a key may send up to "
            "%(burst)s at once (or a minute's worth, when that is less). Empty: the server's %(default)s."
        ) % {"burst": settings.CORE_RATE_LIMIT_BURST, "default": settings.CORE_RATE_LIMIT_PER_MINUTE}

    def clean_helper_model(self):
        return self.cleaned_data["helper_model"] or None

    def changes(self) -> dict:
        """The settings the form changes, in the service's (and the API's) terms."""
        changes = {name: self.cleaned_data[name] for name in EDITABLE_FIELDS if name in self.changed_data}
        if IMPROVEMENTS_FIELD in self.changed_data:
            changes["improvements"] = {**(self.instance.improvements or {}), "enabled": self.cleaned_data[IMPROVEMENTS_FIELD]}
        return changes


def _shown(value) -> str:
    if value is None or value == "":
        return str(_("none"))
    if isinstance(value, bool):
        return str(_("on") if value else _("off"))
    if isinstance(value, dict):
        return _shown(value.get("enabled"))
    return str(value)


@admin.register(Organisation)
class OrganisationAdmin(OrganisationScopedAdmin):
    form = OrganisationForm
    list_display = ("name", "id", "timezone", "capabilities", "rate_limit", "audit_retention_days", "created")
    # Offered models as the API offers them: none stored means every configured model.
    fields = ("id", *(OFFERED_SHOWN.get(name, name) for name in UPDATABLE_FIELDS if name != "improvements"), IMPROVEMENTS_FIELD, "created")
    readonly_fields = tuple(name for name in fields if name not in (*EDITABLE_FIELDS, IMPROVEMENTS_FIELD))

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

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        """A valid change is shown first (what it was, what it becomes) and set once confirmed."""
        if request.method == "POST" and object_id and request.POST.get(CONFIRMED) != "1":
            organisation = self.get_object(request, unquote(object_id))
            if self.has_change_permission(request, organisation):
                form = self.get_form(request, organisation, change=True)(request.POST, instance=organisation)
                if form.is_valid() and form.changes():
                    return self.confirmation(request, form, Organisation.objects.get(pk=organisation.pk))
        return super().changeform_view(request, object_id, form_url, extra_context)

    def confirmation(self, request, form: OrganisationForm, organisation: Organisation) -> TemplateResponse:
        labels = {name: form.fields[name].label for name in form.fields}
        changes = [
            (labels.get(name, labels[IMPROVEMENTS_FIELD]), _shown(getattr(organisation, name)), _shown(value))
            for name, value in form.changes().items()
        ]
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": _("Change the settings of %(name)s?") % {"name": organisation.name},
            "subtitle": None,
            "organisation": organisation,
            "changes": changes,
            "form": form,
        }
        return TemplateResponse(request, "admin/organisations/organisation/confirm.html", context)

    def save_model(self, request, obj, form, change):
        # The form checked the API's bounds; the service checks the helper model is offered.
        updated = organisation_update(
            caller=self.caller(request, obj.pk), organisation=Organisation.objects.get(pk=obj.pk), changes=form.changes()
        )
        obj.updated_at = updated.updated_at
