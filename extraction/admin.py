"""Extraction switches in the console: each store's switch,
its state and what it means, its windows by status, its last run, the most common error with a
plain explanation and the windows that failed; setting it — on or off, model, instructions, types,
schedule, filters — as one of the organisation's keys, validated by the API's serializer
(`SwitchSerializer`) and set by the API's service (`extraction_switch_set`, which audits it), after
a page that shows what will change; and re-sending it as it is (which mends a deleted connector and
re-queues windows that failed for the key).
"""
from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _
from rest_framework.exceptions import ValidationError as DrfValidationError

from audit.console import console_read_audit
from core_memory.base.console.forms import SettingsFields
from core_memory.base.console.pages import OrganisationScopedAdmin, thread_url
from core_memory.base.errors import ApplicationError
from core_memory.base.validation import first_error
from core_memory.agents.models import Agent
from core_memory.keys.actors import actor_labels
from core_memory.base.callers import Caller
from core_memory.keys.models import ApiKey
from extraction.configuration import SwitchSerializer
from extraction.models import ExtractionSwitch, ExtractionWindow
from extraction.selectors import STATE_LABELS, switch_error_code, switch_state, switch_status, switch_windows
from extraction.services.switches import extraction_switch_set
from memory.models import type_label
from stores.configuration import TYPE_LABELS
from stores.models import KnowledgeIndex

FAILED_WINDOWS_SHOWN = 20
SWITCH_TEXTS = {
    "enabled": (_("on"), _("Off: it stops reading conversations; what it wrote stays.")),
    "model": (_("model"), _("The offered model that reads the conversations. Needed when the switch is on.")),
    "instructions": (_("instructions"), _("What the model is told to look for, beside the types.")),
    "types": (_("types"), _("The record types it may write.")),
    "schedule_minutes": (_("every (minutes)"), _("How often it looks for quiet conversations, 1 minute to a week.")),
    "threads": (_("conversations read"), _("Only conversations with a person, or every conversation.")),
    "episodes": (_("episodes"), _("Note each session as an episode.")),
    "lessons": (_("lessons"), _("Note a session's lesson too (needs episodes).")),
    "filters.key_ids": (_("only the conversations of these keys"), _("None ticked: every key.")),
    "filters.agent_ids": (_("only the conversations of these agents"), _("None ticked: every agent.")),
}
# Filled in per organisation by the form: the offered models, her keys and agents by name.
PICKED = ("model", "filters.key_ids", "filters.agent_ids")
SWITCH_SETTINGS = SettingsFields(
    SwitchSerializer, prefix="switch", texts=SWITCH_TEXTS, choices=lambda path: [] if path in PICKED else None, type_labels=TYPE_LABELS
)
CONFIRMED = "confirmed"
STATE_EXPLANATIONS = {
    "active": _("Running: it reads the organisation's quiet conversations on its schedule."),
    "off": _("Switched off. What it wrote stays."),
    "author_unavailable": _("Stopped: the key it runs under is revoked, expired or deleted. Re-send it as a usable key."),
    "model_unavailable": _("Stopped: its model is no longer offered to the organisation. Set an offered model through the API."),
    "objects_missing": _("Stopped: its connector was deleted, or its index is gone. Re-send it to mend the connector."),
}
ERROR_EXPLANATIONS = {
    "invalid_model_output": _("The model answered something that is not the expected JSON; nothing of that window was written."),
    "model_error": _("The model could not be reached or refused the call (after retries)."),
    "pii_redaction_failed": _("Personal data in the conversation could not be redacted, so it was not sent to the model."),
    "threads_capability_missing": _("The key it runs under lacks the capability 'threads'."),
    "write_denied": _("The key it runs under may not write this store."),
    "author_unavailable": _("The key it runs under no longer exists."),
    "write_conflict": _("A record changed at the same moment; the window is tried again."),
    "attempts_exhausted": _("Workers took the window up several times without finishing it."),
}


def error_explanation(code: str | None) -> str:
    return ERROR_EXPLANATIONS.get(code or "", "") if code else ""


class ResendForm(forms.Form):
    key = forms.ChoiceField(
        label=_("send as key"),
        help_text=_("It will run under this key: one of the organisation's with the capabilities threads and memory that may write the store."),
    )


def stored_settings(switch: ExtractionSwitch) -> dict:
    """The switch as the API's body would send it (SwitchSerializer's shape)."""
    return {
        "enabled": switch.enabled,
        "model": switch.model,
        "instructions": switch.instructions,
        "types": list(switch.types),
        "schedule_minutes": switch.schedule_minutes,
        "threads": switch.threads_read,
        "episodes": switch.episodes,
        "lessons": switch.lessons,
        "filters": {"key_ids": list(switch.filter_key_ids), "agent_ids": list(switch.filter_agent_ids)},
    }


class SwitchFormBase(forms.Form):
    """The switch's settings, one field each (declared by `SwitchForm` below), and the key it is set as."""

    key = forms.ChoiceField(
        label=_("set as key"),
        help_text=_("It will run under this key: one of the organisation's with the capabilities threads and memory that may write the store."),
    )

    def __init__(self, *args, switch: ExtractionSwitch, authors: list[ApiKey], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["key"].choices = [(key.id, str(key)) for key in authors]
        models = switch.organisation.offered_model_ids()
        if switch.model and switch.model not in models:
            models = [switch.model, *models]  # shown as it is, refused by the service if sent on
        self.fields["switch__model"].choices = [("", "—"), *((model, model) for model in models)]
        keys = ApiKey.objects.for_organisation(switch.organisation_id).order_by("name")
        agents = Agent.objects.for_organisation(switch.organisation_id).live().order_by("name")
        for name, named, chosen in (
            ("switch__filters__key_ids", {key.id: str(key) for key in keys}, switch.filter_key_ids),
            ("switch__filters__agent_ids", {agent.id: agent.name for agent in agents}, switch.filter_agent_ids),
        ):
            gone = [(each, _("%(id)s (deleted)") % {"id": each}) for each in chosen or [] if each not in named]
            self.fields[name].choices = [*((each, label) for each, label in named.items()), *gone]
        self.fields["switch__instructions"].widget = forms.Textarea(attrs={"rows": 6})

    def settings(self) -> dict:
        return SWITCH_SETTINGS.data(self.cleaned_data)


SwitchForm = type("SwitchForm", (SwitchFormBase,), SWITCH_SETTINGS.fields())


@admin.register(ExtractionSwitch)
class ExtractionSwitchAdmin(OrganisationScopedAdmin):
    list_display = ("index_name", "state_shown", "error_shown", "model", "schedule_minutes", "next_run_at")
    list_select_related = ("index",)
    ordering = ("index__name",)

    def has_add_permission(self, request):
        return False  # a switch is set through the API (PUT …/extraction)

    def has_delete_permission(self, request, obj=None):
        return False  # switched off through the API; deleting the connector stops it

    def get_urls(self):
        wrap = self.admin_site.admin_view
        return [
            path("<path:object_id>/resend/", wrap(self.resend_view), name="extraction_extractionswitch_resend"),
            path("<path:object_id>/set/", wrap(self.set_view), name="extraction_extractionswitch_set"),
            *super().get_urls(),
        ]

    @admin.display(description=_("index"), ordering="index__name")
    def index_name(self, switch: ExtractionSwitch) -> str:
        return switch.index.name

    @admin.display(description=_("state"))
    def state_shown(self, switch: ExtractionSwitch):
        state = switch_state(switch=switch)
        return format_html('<span class="state-badge state-{}">{}</span>', state, STATE_LABELS.get(state, state))

    @admin.display(description=_("most common error"))
    def error_shown(self, switch: ExtractionSwitch):
        code = switch_error_code(switch=switch)
        if not code:
            return "—"
        return format_html('<code title="{}">{}</code>', error_explanation(code), code)

    def usable_authors(self, switch: ExtractionSwitch) -> list[ApiKey]:
        """Her keys that may set this switch: usable, `threads` and `memory`, the write right."""
        keys = ApiKey.objects.for_organisation(switch.organisation_id).usable().order_by("name")
        return [
            key for key in keys
            if key.has_capability("threads") and key.has_capability("memory") and key.may_write(switch.index_id)
        ]

    def switch_of(self, request, object_id: str) -> ExtractionSwitch:
        """Her store's switch, by its index's id. A memory store of hers without one yet gets one not
        yet set — off, with the API's defaults — so that its page turns extraction on as for any other
        (the service makes the switch and its connector). Anything else is a 404."""
        index_id = unquote(object_id)
        try:
            return self.get_object(request, index_id)
        except Http404:
            index = self.scoped(KnowledgeIndex, request).live().filter(pk=index_id, pipeline=KnowledgeIndex.Pipeline.MEMORY).first()
            if index is None:
                raise
            return ExtractionSwitch(index=index, organisation=index.organisation, set_at=timezone.now())

    def change_view(self, request, object_id, form_url="", extra_context=None):
        switch = self.switch_of(request, object_id)
        if not self.has_view_permission(request, switch):
            raise PermissionDenied
        return self.switch_page(request, switch, ResendForm(initial={"key": switch.author_key_id}))

    def settings_form(self, switch: ExtractionSwitch, data=None) -> SwitchFormBase:
        initial = {"key": switch.author_key_id, **SWITCH_SETTINGS.initial(stored_settings(switch))}
        return SwitchForm(data, initial=initial, switch=switch, authors=self.usable_authors(switch))

    def switch_page(self, request, switch: ExtractionSwitch, form: ResendForm, settings_form: SwitchFormBase | None = None):
        status = switch_status(switch=switch)
        authors = self.usable_authors(switch)
        form.fields["key"].choices = [(key.id, str(key)) for key in authors]
        failed = list(switch_windows(switch=switch, status=ExtractionWindow.Status.FAILED)[:FAILED_WINDOWS_SHOWN])
        author = actor_labels(organisation_id=switch.organisation_id, actors=[switch.author_key_id])[switch.author_key_id]
        context = {
            **self.admin_site.each_context(request),
            "title": _("Extraction of %(index)s") % {"index": switch.index.name},
            "subtitle": None,
            "opts": self.opts,
            "original": switch,
            "switch": switch,
            "status": status,
            "state_label": STATE_LABELS.get(status.state, status.state),
            "state_explanation": STATE_EXPLANATIONS.get(status.state, ""),
            "error_explanation": error_explanation(status.error_code),
            "types": [type_label(name) for name in switch.types],
            "author": author,
            "failed": [
                {"window": window, "thread_url": thread_url(self.admin_site, window.thread_id), "explanation": error_explanation(window.error_code)}
                for window in failed
            ],
            "form": form,
            "settings_form": settings_form or self.settings_form(switch),
            "instructions": switch.instructions,
            "set_url": reverse(f"{self.admin_site.name}:extraction_extractionswitch_set", args=[quote(switch.pk)]),
            "may_resend": self.has_change_permission(request, switch) and bool(authors) and not switch._state.adding,
            "not_set_yet": switch._state.adding,
            "may_set": self.has_change_permission(request, switch) and bool(authors),
            "resend_url": reverse(f"{self.admin_site.name}:extraction_extractionswitch_resend", args=[quote(switch.pk)]),
        }
        console_read_audit(
            actor=self.actor(request),
            page="extraction",
            shown=[],
            organisation_id=switch.organisation_id,
            target=switch.index_id,
            details={"state": status.state, "windows": status.windows, "error_code": status.error_code},
        )
        return TemplateResponse(request, "admin/extraction/extractionswitch/switch_page.html", context)

    def resend_view(self, request, object_id):
        """POST: the switch as it is, sent again as the chosen key (mends a deleted
        connector and a lost author; re-queues the windows that failed for the key)."""
        switch = self.get_object(request, unquote(object_id))
        if request.method != "POST" or not self.has_change_permission(request, switch):
            raise PermissionDenied
        form = ResendForm(request.POST)
        authors = {key.id: key for key in self.usable_authors(switch)}
        form.fields["key"].choices = [(key_id, str(key)) for key_id, key in authors.items()]
        if not form.is_valid():
            return self.switch_page(request, switch, form)
        key = authors[form.cleaned_data["key"]]
        index = KnowledgeIndex.objects.for_key(key).filter(pk=switch.index_id).first()
        settings = stored_settings(switch)
        if not switch.model:
            settings.pop("model")
        try:
            if index is None:
                raise ApplicationError(str(_("That key cannot use this store.")))
            serializer = SwitchSerializer(data=settings)
            serializer.is_valid(raise_exception=True)
            extraction_switch_set(caller=Caller(key=key, actor=self.actor(request)), index=index, values=serializer.validated_data, sent=set(settings))
        except DrfValidationError as error:
            path, message = first_error(error.detail)
            messages.error(request, f"{path}: {message}" if path else message)
        except ApplicationError as error:
            messages.error(request, f"{error.param}: {error.message}" if error.param else error.message)
        else:
            messages.success(request, _("The switch was sent again as %(key)s.") % {"key": key})
        return HttpResponseRedirect(reverse(f"{self.admin_site.name}:extraction_extractionswitch_change", args=[quote(switch.pk)]))

    def set_view(self, request, object_id):
        """POST: the switch's settings from its form, as the chosen key. First a page that lists what
        will change; set when that page is confirmed, through the API's serializer and service
        (which audits it as `extraction.switch_set`)."""
        switch = self.switch_of(request, object_id)
        if request.method != "POST" or not self.has_change_permission(request, switch):
            raise PermissionDenied
        form = self.settings_form(switch, request.POST)
        page = reverse(f"{self.admin_site.name}:extraction_extractionswitch_change", args=[quote(switch.pk)])
        if not form.is_valid():
            return self.switch_page(request, switch, ResendForm(initial={"key": switch.author_key_id}), form)
        settings = form.settings()
        if not settings.get("model"):
            settings.pop("model", None)  # off without a model: the serializer's "not sent"
        serializer = SwitchSerializer(data=settings)
        if not serializer.is_valid():
            path, message = first_error(serializer.errors)
            form.add_error(SWITCH_SETTINGS.field_for(path), message)
            return self.switch_page(request, switch, ResendForm(initial={"key": switch.author_key_id}), form)
        key = {key.id: key for key in self.usable_authors(switch)}[form.cleaned_data["key"]]
        changes = self.changes(switch, serializer.validated_data, key)
        if request.POST.get(CONFIRMED) != "1":
            context = {
                **self.admin_site.each_context(request),
                "title": _("Set the extraction of %(index)s?") % {"index": switch.index.name},
                "subtitle": None,
                "opts": self.opts,
                "switch": switch,
                "form": form,
                "changes": changes,
                "set_url": request.path,
                "page_url": page,
            }
            return TemplateResponse(request, "admin/extraction/extractionswitch/switch_confirm.html", context)
        index = KnowledgeIndex.objects.for_key(key).filter(pk=switch.index_id).first()
        try:
            if index is None:
                raise ApplicationError(str(_("That key cannot use this store.")))
            extraction_switch_set(caller=Caller(key=key, actor=self.actor(request)), index=index, values=serializer.validated_data, sent=set(settings))
        except ApplicationError as error:
            messages.error(request, f"{error.param}: {error.message}" if error.param else error.message)
        else:
            messages.success(request, _("The extraction switch is set."))
        return HttpResponseRedirect(page)

    @staticmethod
    def changes(switch: ExtractionSwitch, wanted: dict, key: ApiKey) -> list[tuple[str, str, str]]:
        """(setting, now, then) for every setting the form changes, as the confirmation shows them."""
        stored = stored_settings(switch)
        rows = []

        def shown(value) -> str:
            if isinstance(value, bool):
                return str(_("on") if value else _("off"))
            if isinstance(value, list):
                return ", ".join(str(type_label(item)) for item in value) or "—"
            return str(value) if value not in (None, "") else "—"

        for name, (label, _help) in SWITCH_TEXTS.items():
            group, _dot, inner = name.partition(".")
            before = stored[group][inner] if inner else stored.get(name)
            after = (wanted.get(group) or {}).get(inner) if inner else wanted.get(name, before)
            if before != after:
                rows.append((str(label), shown(before), shown(after)))
        if key.id != switch.author_key_id:
            rows.append((str(_("runs as key")), switch.author_key_id or "—", str(key)))
        return rows
