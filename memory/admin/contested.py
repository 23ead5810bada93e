"""A contested pair side by side in the console: the two records maintenance found to contradict
each other, with what each says, whose it is, how sure and where it came from; and the decision —
they do not contradict each other, or one replaces the other — through the record services,
audited. Editing one is its own record page, linked from here."""
from __future__ import annotations

from django.contrib import messages
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.translation import gettext_lazy as _

from core_memory.base.errors import ApplicationError
from core_memory.base.callers import Caller
from memory.models import MemoryRecord
from memory.services.contradictions import contradiction_resolve

NOT_CONTRADICTING = "not_contradicting"


class ContestedPairPages:
    """For MemoryRecordAdmin: `<record>/contested/<other>/` shows the pair (GET) and decides it (POST)."""

    def contested_urls(self):
        wrap = self.admin_site.admin_view
        return [
            path("<path:object_id>/contested/<str:other_id>/", wrap(self.contested_view), name="memory_memoryrecord_contested"),
        ]

    def contested_url(self, record_id: str, other_id: str) -> str:
        return reverse(f"{self.admin_site.name}:memory_memoryrecord_contested", args=[quote(record_id), quote(other_id)])

    def contested_pair(self, request, object_id: str, other_id: str) -> tuple[MemoryRecord, MemoryRecord]:
        record = self.get_object(request, unquote(object_id))
        other = self.get_object(request, unquote(other_id))
        if not record.contradicts.filter(pk=other.pk).exists() or not self.has_view_permission(request, record):
            raise Http404(_("These two records are not marked as contradicting each other."))
        return record, other

    def contested_view(self, request, object_id: str, other_id: str):
        record, other = self.contested_pair(request, object_id, other_id)
        if request.method == "POST":
            return self.contested_decide(request, record, other)
        context = {
            **self.admin_site.each_context(request),
            "title": _("Do these records contradict each other?"),
            "subtitle": None,
            "opts": self.opts,
            "pair": [self.contested_side(record), self.contested_side(other)],
            "may_decide": self.has_change_permission(request, record) and self.has_change_permission(request, other),
            "not_contradicting": NOT_CONTRADICTING,
        }
        self.audit_read(request, page="contested", records=[record, other], record=record)
        return TemplateResponse(request, "admin/memory/memoryrecord/contested_pair.html", context)

    def contested_side(self, record: MemoryRecord) -> dict:
        return {
            "record": record,
            "url": self.record_url(record.pk),
            "person": self.person(record),
            "type": self.type_name(record),
            "confidence": self.confidences(record),
            "status_and_source": self.status_and_source(record),
            "created": self.created_on(record),
        }

    def contested_decide(self, request, record: MemoryRecord, other: MemoryRecord):
        if not (self.has_change_permission(request, record) and self.has_change_permission(request, other)):
            raise PermissionDenied
        decision = request.POST.get("decision", "")
        if decision not in (NOT_CONTRADICTING, record.pk, other.pk):
            raise PermissionDenied
        kept_id = None if decision == NOT_CONTRADICTING else decision
        try:
            contradiction_resolve(
                caller=Caller.console(organisation_id=record.organisation_id, actor=self.actor(request)),
                record_id=record.pk, other_id=other.pk, kept_id=kept_id,
            )
        except ApplicationError as error:
            messages.error(request, error.message)
            return HttpResponseRedirect(self.contested_url(record.pk, other.pk))
        if kept_id is None:
            messages.success(request, _("The two records no longer count as contradicting each other."))
        else:
            messages.success(request, _("The record you kept replaces the other, which is ended."))
        return HttpResponseRedirect(self.record_url(kept_id or record.pk))
