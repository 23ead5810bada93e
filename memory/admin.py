"""The console's Geheugen section (R-10.1, R-10.2, R-5.4): an administrator's view of her
organisation's records across every index, with their history.

Reads are audited: the list, a record page, its history page and its delete confirmation
each write one `memory.console_read` event naming the administrator and the record ids
shown (memory.console), before the page renders — a failed audit write shows nothing.
Corrections and deletions go through memory.services (`record_update`, `record_delete`),
so history versions and the `memory.updated` / `memory.deleted` events are the API's.

Effective confidence (R-5.9) depends on the reading key's half-lives, and the console
reads with no key. So by default it shows effective = stored (no decay); the "decay as
read by" filter applies the half-lives of one of her organisation's keys, showing the
records as that key's readers see them.
"""
from __future__ import annotations

import json

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseRedirect, QueryDict
from django.template.defaultfilters import yesno
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import formats, timezone
from django.utils.html import format_html, format_html_join
from django.utils.text import Truncator, capfirst
from django.utils.translation import gettext_lazy as _

from core_memory.base.errors import ApplicationError
from core_memory.console.admin import SoftDeleteScopedAdmin
from core_memory.keys.models import ApiKey
from memory.console import console_read_audit
from memory.models import MemoryRecord
from memory.search import text_query
from memory.selectors import effective_confidence_expression, key_half_lives, record_history
from memory.services import COMMITMENT, UPDATABLE_FIELDS, record_delete_by_administrator, record_update_by_administrator
from stores.models import KnowledgeIndex

DECAY_KEY_VAR = "decay_key"
SHARED = "-"  # the person filter's value for shared records (no subject is "-")
COMMITMENT_FIELDS = ("due_at", "done")
EMPTY = "—"
RECORD_PAGE_VERSIONS = 20


def moment(value) -> str:
    """To the second: versions often follow each other within a minute."""
    return formats.date_format(timezone.localtime(value), "Y-m-d H:i:s") if value else EMPTY


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
    """Whose half-lives the effective confidence uses; MemoryRecordAdmin.get_queryset applies them."""

    title = _("decay as read by key")
    parameter_name = DECAY_KEY_VAR

    def lookups(self, request, model_admin):
        keys = model_admin.scoped(ApiKey, request).order_by("name")
        return [(key.pk, f"{key.name} ({key.pk})") for key in keys if key_half_lives(key=key)]

    def queryset(self, request, queryset):
        return queryset


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
    by keys and turns, never added in the console; there is no bulk delete.
    """

    form = MemoryRecordForm
    list_display = (
        "short_text",
        "type",
        "person",
        "stored_confidence",
        "effective_confidence",
        "contested",
        "status",
        "source",
        "provenance_summary",
        "index",
        "created_at",
    )
    list_filter = (
        ("index", IndexListFilter),
        "type",
        PersonListFilter,
        "contested",
        "source",
        "status",
        DecayListFilter,
    )
    list_select_related = ("index",)
    ordering = ("-id",)
    show_full_result_count = False  # a second count over every record of the organisation
    search_fields = ("text",)  # shows the search box; get_search_results searches the stored vector
    search_help_text = _("Full text in Dutch and English: every word must occur, in any inflection.")
    readonly_fields = (
        "id",
        "index",
        "person",
        "type",
        "status",
        "source",
        "trusted",
        "effective_confidence",
        "confirmations",
        "last_confirmed_at",
        "retrieval_count",
        "contested",
        "contradicted_records",
        "thread_id",
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
        (None, {"fields": ("id", "index", "person", "type", "status", "source", "trusted")}),
        (_("Content"), {"fields": ("text", "metadata", "confidence", "effective_confidence", "due_at", "done", "structured")}),
        (_("Use"), {"fields": ("confirmations", "last_confirmed_at", "retrieval_count", "contested", "contradicted_records")}),
        (_("Provenance"), {"fields": ("thread_id", "item_ids", "response_id")}),
        (_("Corrections"), {"fields": ("replaces_link", "replaced_by_link", "corrections_links")}),
        (_("History"), {"fields": ("versions",)}),
        (_("Dates"), {"fields": ("changed_at", "created_at", "updated_at")}),
    )

    # --- what is listed --------------------------------------------------------------------------
    def get_queryset(self, request):
        records = super().get_queryset(request).filter(index__deleted_at__isnull=True)
        return records.annotate(effective_confidence=effective_confidence_expression(half_life_days=self.half_lives(request)))

    def half_lives(self, request) -> dict[str, float]:
        """The half-lives of the key chosen in the decay filter (kept on a record page
        opened from the list), limited to her organisation's keys; none by default."""
        if not hasattr(request, "_console_half_lives"):
            key_id = request.GET.get(DECAY_KEY_VAR) or QueryDict(request.GET.get("_changelist_filters", "")).get(DECAY_KEY_VAR)
            key = self.scoped(ApiKey, request).filter(pk=key_id).first() if key_id else None
            request._console_half_lives = key_half_lives(key=key) if key else {}
        return request._console_half_lives

    def get_search_results(self, request, queryset, search_term):
        """The API list's `q` (R-5.6) over the stored Dutch+English vector, not icontains."""
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
    def short_text(self, record: MemoryRecord) -> str:
        return Truncator(record.text).chars(80)

    @admin.display(description=_("person"), ordering="subject")
    def person(self, record: MemoryRecord) -> str:
        return record.subject or _("shared")

    @admin.display(description=_("confidence"), ordering="confidence")
    def stored_confidence(self, record: MemoryRecord) -> str:
        return formats.number_format(record.confidence, 2)

    @admin.display(description=_("effective confidence"), ordering="effective_confidence")
    def effective_confidence(self, record: MemoryRecord) -> str:
        return formats.number_format(record.effective_confidence, 2)

    @admin.display(description=_("provenance"))
    def provenance_summary(self, record: MemoryRecord) -> str:
        provenance = record.provenance
        if not any(provenance.values()):
            return EMPTY
        items = _("%(count)d items") % {"count": len(provenance["item_ids"])}
        return " · ".join(str(part) for part in (provenance["thread_id"] or EMPTY, items, provenance["response_id"] or EMPTY))

    def record_link(self, record_id: str | None):
        if not record_id:
            return EMPTY
        url = reverse(f"{self.admin_site.name}:memory_memoryrecord_change", args=[quote(record_id)])
        return format_html('<a href="{}">{}</a>', url, record_id)

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

    @admin.display(description=_("contradicts"))
    def contradicted_records(self, record: MemoryRecord):
        return self.record_links(record.contradicts.order_by("id").values_list("id", flat=True))

    @admin.display(description=_("versions"))
    def versions(self, record: MemoryRecord):
        """The newest versions; the history page shows them all."""
        return self.versions_table(record, limit=RECORD_PAGE_VERSIONS)

    def versions_table(self, record: MemoryRecord, *, limit: int | None = None):
        """Stored versions, newest first: what changed it and by whom, and the correction
        links it had then (R-5.4)."""
        commitment = record.type == COMMITMENT
        headers = [_("when"), _("change"), _("text"), _("metadata"), _("confidence"), _("status"), _("confirmations")]
        if commitment:
            headers += [_("due at"), _("done")]
        headers += [_("replaces"), _("replaced by")]
        versions = list(record_history(record=record)[: limit + 1] if limit else record_history(record=record))
        rows = []
        for version in versions[:limit]:
            cells = [
                moment(version.history_date),
                version.history_change_reason or EMPTY,
                version.text,
                json.dumps(version.metadata, ensure_ascii=False),
                formats.number_format(version.confidence, 2),
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
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    # --- writes through the memory services ------------------------------------------------------
    def save_model(self, request, obj, form, change):
        changes = {field: form.cleaned_data[field] for field in UPDATABLE_FIELDS if field in form.changed_data}
        try:
            changed = record_update_by_administrator(
                organisation=obj.organisation_id, record_id=obj.pk, actor=self.actor(request), changes=changes
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
        record_delete_by_administrator(organisation=obj.organisation_id, record_id=obj.pk, actor=self.actor(request))

    # --- every read is audited (R-10.2) ----------------------------------------------------------
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

    def changelist_view(self, request, extra_context=None):
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

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
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
        """The versions of a record (R-5.4), in place of the admin's own action log."""
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
