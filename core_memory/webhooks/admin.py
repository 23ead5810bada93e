"""Webhooks in the console: subscriptions made, changed, paused, resumed and deleted through
core_memory.webhooks.services like the API's routes, each with its delivery log (every attempt).
A paused subscription is flagged on the list with its reason: how its owner learns it keeps failing."""
from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.utils.html import format_html_join
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from core_memory.base.console.pages import OrganisationScopedAdmin
from core_memory.base.console.times import shown_time
from core_memory.webhooks.addresses import AddressRefused, webhook_destination
from core_memory.webhooks.models import EVENT_KINDS, WebhookDelivery, WebhookSubscription
from core_memory.webhooks.selectors import webhooks_paused_counted
from core_memory.webhooks.services import webhook_subscription_create, webhook_subscription_delete, webhook_subscription_update

EDITABLE_FIELDS = ("url", "events", "description", "status")
# What each event kind and each failed attempt's code means, as the console says it (the API's names
# are for programs).
EVENT_LABELS = {
    "record.created": _("a record was made"),
    "record.updated": _("a record was changed"),
    "record.deleted": _("a record was deleted"),
    "record.contested": _("a record was contested"),
    "proposal.created": _("a proposal was made"),
    "extraction.window.failed": _("an extraction window failed"),
    "person.erased": _("a person was erased"),
}
ATTEMPT_ERRORS = {
    "timeout": _("no answer in time"),
    "connection_error": _("could not be reached"),
    "address_refused": _("address refused"),
}


def event_label(kind: str) -> str:
    return str(EVENT_LABELS.get(kind, kind))


def attempt_error_label(code: str) -> str:
    if code.startswith("http_") and code[5:].isdigit():
        return _("answered %(status)s") % {"status": code[5:]}
    return str(ATTEMPT_ERRORS.get(code, code))


class WebhookSubscriptionForm(forms.ModelForm):
    events = forms.MultipleChoiceField(
        label=_("events"), choices=[(kind, EVENT_LABELS.get(kind, kind)) for kind in EVENT_KINDS], widget=forms.CheckboxSelectMultiple
    )

    class Meta:
        model = WebhookSubscription
        fields = ("organisation", "url", "events", "description", "status")

    def clean_url(self) -> str:
        """Checked (and resolved) as the service checks it, so a refusal shows on the field."""
        url = self.cleaned_data["url"]
        try:
            webhook_destination(url)
        except AddressRefused as refused:
            raise forms.ValidationError(refused.message) from None
        return url


class DeliveryInline(admin.TabularInline):
    """The subscription's deliveries, newest first, each with every attempt."""

    model = WebhookDelivery
    fk_name = "subscription"
    fields = ("id", "event", "status", "attempt_log", "next_attempt_at")
    readonly_fields = fields
    ordering = ("-id",)
    extra = 0
    max_num = 0
    can_delete = False
    show_change_link = False
    verbose_name_plural = _("deliveries")

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("run").prefetch_related("log")

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description=_("event"))
    def event(self, delivery: WebhookDelivery) -> str:
        return f"{event_label(delivery.run.kind)} ({delivery.run_id})"

    @admin.display(description=_("attempts"))
    def attempt_log(self, delivery: WebhookDelivery):
        lines = [
            (attempt.number, shown_time(attempt.at), attempt.status_code or "—", attempt.duration_ms,
             attempt_error_label(attempt.error_code) if attempt.error_code else _("delivered"))
            for attempt in delivery.log.all()
        ]
        return format_html_join("", "<div>{}. {} · {} · {} ms · {}</div>", lines) or "—"


@admin.register(WebhookSubscription)
class WebhookSubscriptionAdmin(OrganisationScopedAdmin):
    form = WebhookSubscriptionForm
    list_display = ("url", "events_shown", "status", "paused_reason", "created")
    list_filter = ("status",)
    search_fields = ("url", "description", "id")
    readonly_fields = ("id", "paused_reason", "paused_at", "created", "updated")
    inlines = (DeliveryInline,)

    @admin.display(description=_("events"))
    def events_shown(self, subscription: WebhookSubscription) -> str:
        return ", ".join(event_label(kind) for kind in subscription.events or [])

    def get_fields(self, request, obj=None):
        fields = ["url", "events", "description"]
        if obj is None and self.organisation_id(request) is None:
            fields.insert(0, "organisation")
        if obj is not None:
            fields = ["id", *fields, "status", "paused_reason", "paused_at", "created", "updated"]
        return fields

    def changelist_view(self, request, extra_context=None):
        organisation_id = self.organisation_id(request)
        paused = webhooks_paused_counted(caller=self.caller(request, organisation_id)) if organisation_id else 0
        if paused:
            messages.warning(request, ngettext(
                "%(count)d webhook is paused: its deliveries kept failing. Its events wait until you set it active again.",
                "%(count)d webhooks are paused: their deliveries kept failing. Their events wait until you set them active again.",
                paused,
            ) % {"count": paused})
        return super().changelist_view(request, extra_context)

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        if change:
            changes = {field: data[field] for field in EDITABLE_FIELDS if field in form.changed_data}
            self.adopt(obj, webhook_subscription_update(
                caller=self.caller(request, obj.organisation_id), subscription_id=obj.pk, changes=changes
            ))
            return
        subscription = webhook_subscription_create(
            caller=self.caller(request, self.organisation_for_new(request, form).pk), url=data["url"], events=data["events"],
            description=data.get("description", ""),
        )
        self.adopt(obj, subscription)
        messages.warning(request, _("The webhook's secret, shown only now: %(secret)s") % {"secret": subscription.secret})

    def delete_model(self, request, obj):
        webhook_subscription_delete(caller=self.caller(request, obj.organisation_id), subscription_id=obj.pk)

    def delete_queryset(self, request, queryset):
        for subscription in queryset:
            self.delete_model(request, subscription)
