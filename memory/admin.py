"""The console's Geheugen section: an administrator's view of her
organisation's records across every index, with their history.

Reads are audited: the list, a record page, its history page and its delete confirmation
each write one `memory.console_read` event naming the administrator and the record ids
shown (audit.console), before the page renders — a failed audit write shows nothing.
Corrections and deletions go through memory.services (`record_update`, `record_delete`),
so history versions and the `memory.updated` / `memory.deleted` events are the API's.

Effective confidence depends on the reading key's half-lives, and the console
reads with no key. By default it reads with the organisation's default half-lives (per
type the shortest any of her usable keys sets, memory.selectors.organisation_default_half_lives),
stated above the list; the "decay as read by" filter reads as one given key instead, or
without decay.
"""
from __future__ import annotations

import json

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.contrib.admin.views.main import ChangeList
from django.db.models import Prefetch
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse, HttpResponseRedirect, QueryDict
from django.template.defaultfilters import floatformat, yesno
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import formats, timezone
from django.utils.html import format_html, format_html_join
from django.utils.text import Truncator, capfirst
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from audit.console import console_read_audit
from core_memory.base.console.diff import mapping_diff, text_diff, value_diff
from core_memory.base.console.pages import SoftDeleteScopedAdmin, person_url, thread_url
from core_memory.base.console.times import shown_time
from core_memory.base.errors import ApplicationError
from core_memory.keys.actors import actor_labels
from core_memory.keys.models import ApiKey
from memory.models import MemoryRecord, type_label
from memory.search import text_query
from memory.selectors import (
    change_reason_parts,
    effective_confidence_expression,
    key_half_lives,
    organisation_default_half_lives,
    record_history,
)
from memory.services import (
    COMMITMENT,
    UPDATABLE_FIELDS,
    record_delete_by_administrator,
    record_update_by_administrator,
    records_delete_by_administrator,
    records_export_by_administrator,
)
from stores.models import KnowledgeIndex

DECAY_KEY_VAR = "decay_key"
NO_DECAY = "-"  # the decay filter's value for reading the stored confidence
DATES_VAR = "dates"
BULK_CONFIRMED = "post"  # the confirmation page's answer, as Django's own delete_selected names it
SHARED = "-"  # the person filter's value for shared records (no subject is "-")
COMMITMENT_FIELDS = ("due_at", "done")
EMPTY = "—"
RECORD_PAGE_VERSIONS = 20
# What each kind of version is called (memory.services.change_reason's "what").
CHANGE_KINDS = {
    "created": _("created"),
    "confirmed": _("confirmed"),
    "corrected": _("created as a correction"),
    "ended": _("ended by a correction"),
    "updated": _("edited"),
    "deleted": _("deleted"),
    "contested": _("marked contested"),
    "no longer contested": _("no longer contested"),
}


def moment(value) -> str:
    """To the second: versions often follow each other within a minute."""
    return shown_time(value, seconds=True)


class IndexListFilter(admin.RelatedFieldListFilter):
    """Her organisation's live indexes only, also those that hold no record yet."""

    def field_choices(self, field, request, model_admin):
        indexes = model_admin.scoped(KnowledgeIndex, request).live().order_by("name")
        return [(index.pk, str(index)) for index in indexes]


class PersonListFilter(admin.SimpleListFilter):
    title = _("person")
    parameter_name = "person"

    def lookups(self, request, model_admin):
        subjects = (
            model_admin.get_queryset(request)
            .filter(subject__isnull=False)
            .order_by("subject")
            .values_list("subject", flat=True)
            .distinct()
        )
        return [(SHARED, _("shared")), *[(subject, subject) for subject in subjects]]

    def queryset(self, request, queryset):
        if self.value() == SHARED:
            return queryset.filter(subject__isnull=True)
        if self.value():
            return queryset.filter(subject=self.value())
        return queryset


class DecayListFilter(admin.SimpleListFilter):
    """Whose half-lives the effective confidence uses; MemoryRecordAdmin.get_queryset applies them.
    "All" is the organisation's default half-lives."""

    title = _("decay as read by key")
    parameter_name = DECAY_KEY_VAR

    def lookups(self, request, model_admin):
        keys = model_admin.scoped(ApiKey, request).order_by("name")
        return [(NO_DECAY, _("no decay (stored confidence)"))] + [
            (key.pk, f"{key.name} ({key.pk})") for key in keys if key_half_lives(key=key)
        ]

    def choices(self, changelist):
        choices = list(super().choices(changelist))
        choices[0]["display"] = _("the organisation's default half-lives")
        return choices

    def queryset(self, request, queryset):
        return queryset


class TypeListFilter(admin.SimpleListFilter):
    """The types her records have, by their translated names."""

    title = _("type")
    parameter_name = "type"

    def lookups(self, request, model_admin):
        types = model_admin.get_queryset(request).order_by("type").values_list("type", flat=True).distinct()
        return [(type_name, type_label(type_name)) for type_name in types]

    def queryset(self, request, queryset):
        return queryset.filter(type=self.value()) if self.value() else queryset


class DatesListFilter(admin.SimpleListFilter):
    """Which date the list's date hierarchy walks: created (default) or last updated."""

    title = _("dates by")
    parameter_name = DATES_VAR

    def lookups(self, request, model_admin):
        return [("updated", _("last updated"))]

    def choices(self, changelist):
        choices = list(super().choices(changelist))
        choices[0]["display"] = _("created")
        return choices

    def queryset(self, request, queryset):
        return queryset


class RecordChangeList(ChangeList):
    """The record list, whose date hierarchy follows the "dates by" filter."""

    def __init__(self, request, model, list_display, list_display_links, list_filter, date_hierarchy, *args, **kwargs):
        if request.GET.get(DATES_VAR) == "updated":
            date_hierarchy = "updated_at"
        super().__init__(request, model, list_display, list_display_links, list_filter, date_hierarchy, *args, **kwargs)


class MemoryRecordForm(forms.ModelForm):
    confidence = forms.FloatField(label=capfirst(_("confidence")), min_value=0.0, max_value=1.0)

    class Meta:
        model = MemoryRecord
        fields = UPDATABLE_FIELDS

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # A field counts as changed when it differs from the stored record, not from a hidden
        # copy the browser posts back (Django adds one for fields with callable defaults).
        for field in self.fields.values():
            field.show_hidden_initial = False

    def clean_metadata(self):
        metadata = self.cleaned_data["metadata"]
        if metadata is None:  # the field left empty
            return {}
        if not isinstance(metadata, dict):
            raise forms.ValidationError(_("Metadata is a JSON object."))
        return metadata


@admin.register(MemoryRecord)
class MemoryRecordAdmin(SoftDeleteScopedAdmin):  # a delete is soft
    """Records of her organisation's live indexes, every status (filter on status to narrow).

    Only what an administrator may correct is editable — text, metadata, confidence and,
    for commitments, due_at and done — and only on an active record. Records are written
    by keys and turns, never added in the console. Selected records are exported or deleted
    together, after a page that lists them.
    """

    form = MemoryRecordForm
    list_display = (
        "short_text",
        "type_name",
        "person",
        "confidences",
        "contested_badge",
        "status_and_source",
        "index_name",
        "created_on",
    )
    list_filter = (
        ("index", IndexListFilter),
        TypeListFilter,
        PersonListFilter,
        "contested",
        "source",
        "status",
        DecayListFilter,
        DatesListFilter,
    )
    date_hierarchy = "created_at"
    list_select_related = ("index",)
    ordering = ("-id",)
    show_full_result_count = False  # a second count over every record of the organisation
    search_fields = ("text",)  # shows the search box; get_search_results searches the stored vector
    search_help_text = _("Full text in Dutch and English: every word must occur, in any inflection.")
    readonly_fields = (
        "id",
        "index",
        "person",
        "type_name",
        "status",
        "source",
        "trusted",
        "effective_confidence",
        "confirmations",
        "last_confirmed_at",
        "retrieval_count",
        "contested_badge",
        "thread_link",
        "item_ids",
        "response_id",
        "replaces_link",
        "replaced_by_link",
        "corrections_links",
        "structured",
        "versions",
        "changed_at",
        "created_at",
        "updated_at",
    )
    fieldsets = (
        (None, {"fields": ("id", "index", "person", "type_name", "status", "source", "trusted")}),
        (_("Content"), {"fields": ("text", "metadata", "confidence", "effective_confidence", "due_at", "done", "structured")}),
        (_("Use"), {"fields": ("confirmations", "last_confirmed_at", "retrieval_count", "contested_badge")}),
        (_("Provenance"), {"fields": ("thread_link", "item_ids", "response_id")}),
        (_("Corrections"), {"fields": ("replaces_link", "replaced_by_link", "corrections_links")}),
        (_("History"), {"fields": ("versions",)}),
        (_("Dates"), {"fields": ("changed_at", "created_at", "updated_at")}),
    )

    # --- what is listed --------------------------------------------------------------------------
    def get_queryset(self, request):
        records = super().get_queryset(request).filter(index__deleted_at__isnull=True)
        # Only the ids of the records each one contradicts, for the contested badge: one query per page.
        contradicted = Prefetch("contradicts", queryset=MemoryRecord.objects.unscoped().only("id").order_by("id"))
        return records.prefetch_related(contradicted).annotate(
            effective_confidence=effective_confidence_expression(half_life_days=self.decay_reading(request)[1])
        )

    def get_changelist(self, request, **kwargs):
        return RecordChangeList

    def decay_reading(self, request) -> tuple[str, dict[str, float]]:
        """(what the effective confidence is read with, its half-lives): the key chosen in the
        decay filter (kept on a record page opened from the list), limited to her organisation's
        keys; no decay; or by default the organisation's default half-lives."""
        if not hasattr(request, "_console_decay"):
            key_id = request.GET.get(DECAY_KEY_VAR) or QueryDict(request.GET.get("_changelist_filters", "")).get(DECAY_KEY_VAR)
            organisation_id = self.organisation_id(request)
            if key_id == NO_DECAY:
                reading = (_("no decay: effective confidence is the stored confidence"), {})
            elif key_id:
                key = self.scoped(ApiKey, request).filter(pk=key_id).first()
                half_lives = key_half_lives(key=key) if key else {}
                reading = (_("the half-lives of key %(key)s") % {"key": key} if key else _("no decay"), half_lives)
            elif organisation_id:
                half_lives = organisation_default_half_lives(organisation_id=organisation_id)
                reading = (_("the organisation's default half-lives (per type the shortest any of its usable keys sets)"), half_lives)
            else:  # a superuser across organisations: no one organisation's default applies
                reading = (_("no decay: effective confidence is the stored confidence"), {})
            request._console_decay = reading
        return request._console_decay

    def decay_statement(self, request) -> str:
        """The sentence above the list and on a record page saying how effective confidence is read."""
        label, half_lives = self.decay_reading(request)
        if not half_lives:
            return _("Effective confidence is read with %(reading)s; no type decays.") % {"reading": label}
        listed = ", ".join(
            _("%(type)s: %(days)s days") % {"type": type_label(name), "days": floatformat(days, -3)}
            for name, days in half_lives.items()
        )
        return _("Effective confidence is read with %(reading)s: %(half_lives)s.") % {"reading": label, "half_lives": listed}

    def changelist_view(self, request, extra_context=None):
        extra_context = {"decay_statement": self.decay_statement(request), **(extra_context or {})}
        response = super().changelist_view(request, extra_context)
        changelist = self.renders(response, "cl")
        if changelist is not None:
            # Evaluates the page's queryset once; the template renders these very rows.
            self.audit_read(
                request,
                page="list",
                records=list(changelist.result_list),
                details={"filters": changelist.get_filters_params(), "search": changelist.query, "page_number": changelist.page_num},
            )
        return response

    def get_search_results(self, request, queryset, search_term):
        """The API list's `q` over the stored Dutch+English vector, not icontains."""
        if not search_term.strip():
            return queryset, False
        query = text_query(search_term, match_all=True)
        if query is None:
            return queryset.none(), False
        return queryset.filter(search_vector=query), False

    def get_fieldsets(self, request, obj=None):
        hidden = set()
        if obj is not None and obj.type != COMMITMENT:
            hidden.update(COMMITMENT_FIELDS)
        if obj is not None and obj.structured is None:
            hidden.add("structured")
        return [
            (name, {**options, "fields": tuple(field for field in options["fields"] if field not in hidden)})
            for name, options in self.fieldsets
        ]

    # --- columns and read-only fields ------------------------------------------------------------
    @admin.display(description=_("text"), ordering="text")
    def short_text(self, record: MemoryRecord):
        """One line, cut to the column's width; the whole text on hover and on the record's page."""
        return format_html('<span class="truncated" title="{}">{}</span>', record.text, Truncator(record.text).chars(300))

    @admin.display(description=_("type"), ordering="type")
    def type_name(self, record: MemoryRecord) -> str:
        return type_label(record.type)

    @admin.display(description=_("person"), ordering="subject")
    def person(self, record: MemoryRecord):
        """Her (or "shared"), and under it the thread the record came from, if any (its provenance)."""
        if record.subject is None:
            who = format_html("{}", _("shared"))
        else:
            who = format_html('<a href="{}">{}</a>', person_url(self.admin_site, record.organisation_id, record.subject), record.subject)
        if not record.thread_id:
            return who
        return format_html('{}<br><small class="provenance">{}</small>', who, self.provenance_line(record))

    @admin.display(description=_("index"), ordering="index__name")
    def index_name(self, record: MemoryRecord) -> str:
        return record.index.name

    @admin.display(description=_("created at"), ordering="created_at")
    def created_on(self, record: MemoryRecord) -> str:
        return shown_time(record.created_at, short=True)

    @admin.display(description=_("status · source"), ordering="status")
    def status_and_source(self, record: MemoryRecord) -> str:
        return f"{record.get_status_display()} · {record.get_source_display()}"

    @admin.display(description=_("confidence"), ordering="effective_confidence")
    def confidences(self, record: MemoryRecord) -> str:
        """Stored, and "→ effective" where decay makes them differ (the list's note says how it is read)."""
        stored = formats.number_format(record.confidence, 2)
        effective = formats.number_format(record.effective_confidence, 2)
        return stored if stored == effective else f"{stored} → {effective}"

    @admin.display(description=_("effective confidence"), ordering="effective_confidence")
    def effective_confidence(self, record: MemoryRecord) -> str:
        return formats.number_format(record.effective_confidence, 2)

    @admin.display(description=_("contested"), ordering="contested")
    def contested_badge(self, record: MemoryRecord):
        """A warning, not a tick: maintenance found a record this one contradicts."""
        if not record.contested:
            return EMPTY
        contradicted = [other.pk for other in record.contradicts.all()]
        if not contradicted:
            return format_html('<span class="badge-contested">{}</span>', _("contested"))
        return format_html_join(
            " ",
            '<a class="badge-contested" href="{}" title="{}">{}</a>',
            (
                (self.record_url(other_id), _("contradicts %(record)s") % {"record": other_id}, _("contested"))
                for other_id in contradicted
            ),
        )

    def provenance_line(self, record: MemoryRecord):
        """The thread a record came from (linked to its page) and how many of its items."""
        items = ngettext("%(count)d item", "%(count)d items", len(record.item_ids or [])) % {"count": len(record.item_ids or [])}
        return format_html('<a href="{}">{}</a> · {}', thread_url(self.admin_site, record.thread_id), _("thread"), items)

    @admin.display(description=_("thread"))
    def thread_link(self, record: MemoryRecord):
        if not record.thread_id:
            return EMPTY
        return format_html('<a href="{}">{}</a>', thread_url(self.admin_site, record.thread_id), record.thread_id)

    def record_url(self, record_id: str) -> str:
        return reverse(f"{self.admin_site.name}:memory_memoryrecord_change", args=[quote(record_id)])

    def record_link(self, record_id: str | None):
        if not record_id:
            return EMPTY
        return format_html('<a href="{}">{}</a>', self.record_url(record_id), record_id)

    def record_links(self, record_ids):
        return format_html_join(", ", "{}", ((self.record_link(record_id),) for record_id in record_ids)) or EMPTY

    @admin.display(description=_("replaces"))
    def replaces_link(self, record: MemoryRecord):
        return self.record_link(record.replaces_id)

    @admin.display(description=_("replaced by"))
    def replaced_by_link(self, record: MemoryRecord):
        return self.record_link(record.replaced_by_id)

    @admin.display(description=_("corrected by"))
    def corrections_links(self, record: MemoryRecord):
        return self.record_links(record.corrections.order_by("id").values_list("id", flat=True))

    @admin.display(description=_("versions"))
    def versions(self, record: MemoryRecord):
        """The newest versions; the history page shows them all."""
        return self.versions_table(record, limit=RECORD_PAGE_VERSIONS)

    def versions_table(self, record: MemoryRecord, *, limit: int | None = None):
        """Stored versions, newest first: when, what kind of change, who (a key by its
        name, an administrator as such), and what changed against the version before it —
        text, confidence and metadata highlighted — with the correction links it had then."""
        commitment = record.type == COMMITMENT
        headers = [_("when"), _("change"), _("by"), _("text"), _("confidence"), _("metadata"), _("status"), _("confirmations")]
        if commitment:
            headers += [_("due at"), _("done")]
        headers += [_("replaces"), _("replaced by")]
        # One version more than shown: the oldest shown is diffed against it, and it says there are more.
        history = record_history(record=record)
        versions = list(history[: limit + 1] if limit else history)
        shown = versions[:limit] if limit else versions
        reasons = [change_reason_parts(version.history_change_reason) for version in shown]
        actors = actor_labels(organisation_id=record.organisation_id, actors=[actor for _what, actor in reasons])
        rows = []
        for position, (version, (what, actor)) in enumerate(zip(shown, reasons, strict=True)):
            previous = versions[position + 1] if position + 1 < len(versions) else None
            kind = _("erased") if version.history_type == "-" else CHANGE_KINDS.get(what, what or EMPTY)
            cells = [
                moment(version.history_date),
                format_html('<span class="change-kind">{}</span>', kind),
                actors[actor],
                text_diff(previous.text if previous else None, version.text),
                value_diff(previous.confidence if previous else None, version.confidence, shown=lambda value: formats.number_format(value, 2)),
                mapping_diff(previous.metadata if previous else None, version.metadata),
                version.get_status_display(),
                version.confirmations,
            ]
            if commitment:
                cells += [moment(version.due_at), yesno(version.done)]
            cells += [self.record_link(version.replaces_id), self.record_link(version.replaced_by_id)]
            rows.append(cells)
        more_url = None
        if limit and len(versions) > limit:
            more_url = reverse(f"{self.admin_site.name}:memory_memoryrecord_history", args=[quote(record.pk)])
        return render_to_string(
            "admin/memory/memoryrecord/versions_table.html",
            {"headers": headers, "rows": rows, "more_url": more_url, "more_label": _("Every version")},
        )

    # --- permissions -------------------------------------------------------------------------------
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        allowed = super().has_change_permission(request, obj)
        return allowed and (obj is None or obj.status == MemoryRecord.Status.ACTIVE)

    def has_delete_permission(self, request, obj=None):
        allowed = super().has_delete_permission(request, obj)
        return allowed and (obj is None or obj.status != MemoryRecord.Status.DELETED)

    def get_actions(self, request):
        """Django's delete_selected would delete rows outright; ours go through the services."""
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        if not self.has_delete_permission(request):
            actions.pop("delete_records", None)
        return actions

    actions = ("export_records", "delete_records")

    @admin.action(description=_("Export the selected records (JSON Lines)"))
    def export_records(self, request, queryset):
        """After a page that lists them: the records as export lines with their history, the file
        `import_memory` reads back; audited as `memory.exported`."""
        records = list(queryset.order_by("id")[: self.BULK_LIMIT])
        if request.POST.get(BULK_CONFIRMED) != "yes":
            return self.bulk_confirmation(request, records, action="export_records")
        lines = records_export_by_administrator(
            organisation_id=self.organisation_id(request) or records[0].organisation_id, record_ids=[record.pk for record in records], actor=self.actor(request)
        )
        body = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
        response = HttpResponse(body, content_type="application/x-ndjson; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="core-geheugen-records-{len(lines)}.jsonl"'
        return response

    @admin.action(description=_("Delete the selected records"))
    def delete_records(self, request, queryset):
        """After a page that lists them: every one deleted through the memory service, or none."""
        records = list(queryset.order_by("id")[: self.BULK_LIMIT])
        if request.POST.get(BULK_CONFIRMED) != "yes":
            return self.bulk_confirmation(request, records, action="delete_records")
        deleted = records_delete_by_administrator(
            organisation_id=self.organisation_id(request) or records[0].organisation_id, record_ids=[record.pk for record in records], actor=self.actor(request)
        )
        messages.success(request, ngettext("%(count)d record deleted.", "%(count)d records deleted.", deleted) % {"count": deleted})
        return None

    BULK_LIMIT = 1000  # the most records one action takes; the confirmation says so when it cuts

    def bulk_confirmation(self, request, records: list[MemoryRecord], *, action: str):
        """The page between choosing records and exporting or deleting them; a read, so audited."""
        self.audit_read(request, page=f"bulk-{action}", records=records)
        context = {
            **self.admin_site.each_context(request),
            "title": _("Delete these records?") if action == "delete_records" else _("Export these records?"),
            "subtitle": None,
            "opts": self.opts,
            "records": records,
            "action": action,
            "deleting": action == "delete_records",
            "limit": self.BULK_LIMIT,
            "at_limit": len(records) >= self.BULK_LIMIT,
            "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME,
            "changelist_url": reverse(f"{self.admin_site.name}:memory_memoryrecord_changelist"),
        }
        return TemplateResponse(request, "admin/memory/memoryrecord/bulk_confirm.html", context)

    # --- writes through the memory services ------------------------------------------------------
    def save_model(self, request, obj, form, change):
        changes = {field: form.cleaned_data[field] for field in UPDATABLE_FIELDS if field in form.changed_data}
        try:
            changed = record_update_by_administrator(
                organisation_id=obj.organisation_id, record_id=obj.pk, actor=self.actor(request), changes=changes
            )
            self.adopt(obj, changed)
        except ApplicationError as error:
            request._console_save_refused = True
            messages.error(request, error.message)

    def log_change(self, request, obj, message):
        if getattr(request, "_console_save_refused", False):
            return None
        return super().log_change(request, obj, message)

    def response_change(self, request, obj):
        if getattr(request, "_console_save_refused", False):
            return HttpResponseRedirect(request.path)
        return super().response_change(request, obj)

    def delete_model(self, request, obj):
        record_delete_by_administrator(organisation_id=obj.organisation_id, record_id=obj.pk, actor=self.actor(request))

    # --- every read is audited ----------------------------------------------------------
    def audit_read(self, request, *, page: str, records, record: MemoryRecord | None = None, details: dict | None = None):
        console_read_audit(
            actor=self.actor(request),
            page=page,
            shown=[(shown.pk, shown.organisation_id) for shown in records],
            organisation_id=record.organisation_id if record is not None else self.organisation_id(request),
            target=record.pk if record is not None else "",
            details=details,
        )

    @staticmethod
    def renders(response, name: str):
        """The context object `name` of a page about to render, or None (a redirect, an error)."""
        if isinstance(response, TemplateResponse) and response.status_code == 200 and response.context_data:
            return response.context_data.get(name)
        return None

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        extra_context = {"decay_statement": self.decay_statement(request), **(extra_context or {})}
        response = super().changeform_view(request, object_id, form_url, extra_context)
        record = self.renders(response, "original")
        if record is not None:
            self.audit_read(request, page="record", records=[record], record=record)
        return response

    def delete_view(self, request, object_id, extra_context=None):
        response = super().delete_view(request, object_id, extra_context)
        record = self.renders(response, "object")
        if record is not None:
            self.audit_read(request, page="delete", records=[record], record=record)
        return response

    def history_view(self, request, object_id, extra_context=None):
        """The versions of a record, in place of the admin's own action log."""
        record = self.get_object(request, unquote(object_id))
        if not self.has_view_or_change_permission(request, record):
            raise PermissionDenied
        context = {
            **self.admin_site.each_context(request),
            "title": _("History: %s") % record,
            "subtitle": None,
            "module_name": self.opts.verbose_name_plural,
            "object": record,
            "opts": self.opts,
            "versions": self.versions_table(record),
            **(extra_context or {}),
        }
        self.audit_read(request, page="history", records=[record], record=record)
        return TemplateResponse(request, "admin/memory/memoryrecord/object_history.html", context)
