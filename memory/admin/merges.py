"""Merging duplicates in the console: records chosen in the list, one kept — its text as the
administrator words it — and the others ended, replaced by it (memory.services.merges, audited
there). Three steps, each a POST of the list's action form: choose which to keep and its text,
see what will happen, confirm."""
from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.admin.utils import quote
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.translation import gettext_lazy as _

from core_memory.base.callers import Caller
from core_memory.base.errors import ApplicationError
from memory.models import MemoryRecord
from memory.services.merges import records_merge_by_administrator, records_merge_check

STEP = "post"  # the action form's step: absent (choose), "check" (what will happen), "yes" (merge)


class RecordMergePages:
    """For MemoryRecordAdmin: the action `merge_records` and its pages."""

    MERGE_LIMIT = 50  # the most records one merge takes

    @admin.action(description=_("Merge the selected records (duplicates)"))
    def merge_records(self, request, queryset):
        records = sorted(queryset.order_by("id")[: self.MERGE_LIMIT], key=lambda record: (-record.confirmations, record.created_at))
        administrator = Caller.console(
            organisation_id=self.organisation_id(request) or (records[0].organisation_id if records else ""), actor=self.actor(request)
        )
        step = request.POST.get(STEP, "")
        kept_id = request.POST.get("kept") or (records[0].pk if records else "")
        text = request.POST.get("text") if step else (records[0].text if records else "")
        ids = [record.pk for record in records]
        try:
            kept, ended = records_merge_check(caller=administrator, record_ids=ids, kept_id=kept_id, text=text)
        except ApplicationError as error:
            if not step or error.param == "record_ids":  # the wrong records chosen: back to the list
                messages.error(request, error.message)
                return None
            return self.merge_page(request, records, kept_id=kept_id, text=text, error=error.message)
        if step != "yes":
            return self.merge_page(request, records, kept_id=kept.pk, text=text, confirming=step == "check", ended=ended)
        try:
            merged = records_merge_by_administrator(caller=administrator, record_ids=ids, kept_id=kept.pk, text=text)
        except ApplicationError as error:
            messages.error(request, error.message)
            return None
        messages.success(request, _("The records are merged: this one is kept, the others are ended, replaced by it."))
        return HttpResponseRedirect(reverse(f"{self.admin_site.name}:memory_memoryrecord_change", args=[quote(merged.pk)]))

    def merge_page(self, request, records: list[MemoryRecord], *, kept_id: str, text: str, confirming: bool = False, ended=(), error: str = ""):
        """Choosing the record kept and its text, or (`confirming`) what the merge will do; a read, so audited."""
        self.audit_read(request, page="merge-confirm" if confirming else "merge", records=records)
        kept = next((record for record in records if record.pk == kept_id), None)
        context = {
            **self.admin_site.each_context(request),
            "title": _("Merge these records?") if confirming else _("Merge duplicates"),
            "subtitle": None,
            "opts": self.opts,
            "records": records,
            "kept": kept,
            "kept_id": kept_id,
            "text": text,
            "text_changes": kept is not None and text != kept.text,
            "ended": ended,
            "confirming": confirming,
            "error": error,
            "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME,
            "changelist_url": reverse(f"{self.admin_site.name}:memory_memoryrecord_changelist"),
        }
        return TemplateResponse(request, "admin/memory/memoryrecord/merge.html", context)
