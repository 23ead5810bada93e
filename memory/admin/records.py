"""The record list and a record's pages: what is listed, who may change what, writes through
memory's services, and every read audited."""
from __future__ import annotations

import json

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import Prefetch
from django.http import HttpResponse, HttpResponseRedirect, QueryDict
from django.template.defaultfilters import floatformat
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from audit.console import console_read_audit
from core_memory.base.console.pages import SoftDeleteScopedAdmin
from core_memory.base.errors import ApplicationError
from core_memory.base.callers import Caller
from core_memory.keys.models import ApiKey
from memory.admin.columns import RecordColumns
from memory.admin.contested import ContestedPairPages
from memory.admin.filters import (
    DECAY_KEY_VAR,
    NO_DECAY,
    DatesListFilter,
    DecayListFilter,
    IndexListFilter,
    PersonListFilter,
    RecordChangeList,
    TypeListFilter,
)
from memory.admin.forms import MemoryRecordForm
from memory.admin.merges import RecordMergePages
from memory.models import MemoryRecord, type_label
from memory.search import records_matching
from memory.search.decay import effective_confidence_expression, key_half_lives
from memory.selectors import organisation_default_half_lives
from memory.services.changes import (
    record_delete_by_administrator,
    record_update_by_administrator,
    records_delete_by_administrator,
    records_export_by_administrator,
)
from memory.services.rules import COMMITMENT, UPDATABLE_FIELDS

BULK_CONFIRMED = "post"  # the confirmation page's answer, as Django's own delete_selected names it
COMMITMENT_FIELDS = ("due_at", "done")


@admin.register(MemoryRecord)
class MemoryRecordAdmin(ContestedPairPages, RecordMergePages, RecordColumns, SoftDeleteScopedAdmin):  # a delete is soft
    """Records of her organisation's live indexes, every status (filter on status to narrow).

    Only what an administrator may correct is editable — text, metadata, confidence and,
    for commitments, due_at and done — and only on an active record. Records are written
    by keys and turns, never added in the console. Selected records are exported or deleted
    together, after a page that lists them, or merged as duplicates (memory.admin.merges).
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
        "standing_at",
        "versions",
        "changed_at",
        "created_at",
        "updated_at",
    )
    fieldsets = (
        (None, {"fields": ("id", "index", "person", "type_name", "status", "source", "trusted")}),
        (_("Content"), {"fields": ("text", "metadata", "confidence", "effective_confidence", "due_at", "done", "expires_at", "structured")}),
        (_("Use"), {"fields": ("confirmations", "last_confirmed_at", "retrieval_count", "contested_badge")}),
        (_("Provenance"), {"fields": ("thread_link", "item_ids", "response_id")}),
        (_("Corrections"), {"fields": ("replaces_link", "replaced_by_link", "corrections_links")}),
        (_("History"), {"fields": ("standing_at", "versions")}),
        (_("Dates"), {"fields": ("changed_at", "created_at", "updated_at")}),
    )

    # --- what is listed --------------------------------------------------------------------------
    def get_urls(self):
        return [*self.contested_urls(), *super().get_urls()]

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
                half_lives = organisation_default_half_lives(caller=self.caller(request, organisation_id))
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

    def get_object(self, request, object_id, from_field=None):
        """The record; with `?as_of=` (ISO 8601) its page also shows it as it stood then."""
        record = super().get_object(request, object_id, from_field)
        try:
            at = parse_datetime(request.GET.get("as_of", "") or "")
        except ValueError:  # the shape of a time, but none (a 13th month)
            at = None
        if at is not None and record is not None:
            record.console_as_of = at if timezone.is_aware(at) else timezone.make_aware(at)
        return record

    def get_search_results(self, request, queryset, search_term):
        """The API list's `q` over the stored Dutch+English vector, not icontains."""
        if not search_term.strip():
            return queryset, False
        return records_matching(queryset, text=search_term), False

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
        if not self.has_change_permission(request):
            actions.pop("merge_records", None)
        return actions

    actions = ("export_records", "merge_records", "delete_records")

    @admin.action(description=_("Export the selected records (JSON Lines)"))
    def export_records(self, request, queryset):
        """After a page that lists them: the records as export lines with their history, the file
        `import_memory` reads back; audited as `memory.exported`."""
        records = list(queryset.order_by("id")[: self.BULK_LIMIT])
        if request.POST.get(BULK_CONFIRMED) != "yes":
            return self.bulk_confirmation(request, records, action="export_records")
        administrator = Caller.console(organisation_id=self.organisation_id(request) or records[0].organisation_id, actor=self.actor(request))
        lines = records_export_by_administrator(caller=administrator, record_ids=[record.pk for record in records])
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
        administrator = Caller.console(organisation_id=self.organisation_id(request) or records[0].organisation_id, actor=self.actor(request))
        deleted = records_delete_by_administrator(caller=administrator, record_ids=[record.pk for record in records])
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
            administrator = Caller.console(organisation_id=obj.organisation_id, actor=self.actor(request))
            changed = record_update_by_administrator(caller=administrator, record_id=obj.pk, changes=changes)
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
        record_delete_by_administrator(caller=Caller.console(organisation_id=obj.organisation_id, actor=self.actor(request)), record_id=obj.pk)

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
