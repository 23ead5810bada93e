"""Proposals in the console: the queue of suggestions to
share a person's fact, each with the records it rests on, applied or rejected through
`proposal_apply_by_administrator` / `proposal_reject_by_administrator` (audited there). Reading the
queue or a proposal is a console read. Who may read her organisation's records may read
its proposals; who may correct records may decide them.
"""
from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.translation import gettext_lazy as _

from audit.console import console_read_audit
from core_memory.base.console.pages import ReadOnlyScopedAdmin, person_url
from core_memory.base.errors import ApplicationError
from core_memory.keys.actors import actor_labels
from core_memory.base.callers import Caller
from maintenance.models import Proposal
from maintenance.selectors import proposal_list_for_organisation
from maintenance.services.proposals import proposal_apply_by_administrator, proposal_reject_by_administrator
from memory.models import type_label


@admin.register(Proposal)
class ProposalAdmin(ReadOnlyScopedAdmin):
    list_display = ("text", "type_name", "reason", "status", "index_name", "resting_on", "created_at")
    list_filter = ("status", "reason")
    ordering = ("-id",)
    show_full_result_count = False

    # --- permissions: part of the memory she reads and corrects --------------------------
    def has_view_permission(self, request, obj=None):
        return self._administers(request) and request.user.has_perm("memory.view_memoryrecord")

    def has_module_permission(self, request):
        return self.has_view_permission(request)

    def may_decide(self, request) -> bool:
        return self._administers(request) and request.user.has_perm("memory.change_memoryrecord")

    def get_queryset(self, request):
        organisation_id = self.organisation_id(request)
        if organisation_id:
            return proposal_list_for_organisation(organisation_id=organisation_id)
        return super().get_queryset(request).live().select_related("index").prefetch_related("sources__record")

    def get_urls(self):
        wrap = self.admin_site.admin_view
        return [
            path("<path:object_id>/decide/", wrap(self.decide_view), name="maintenance_proposal_decide"),
            *super().get_urls(),
        ]

    # --- columns ---------------------------------------------------------------------------------
    @admin.display(description=_("type"), ordering="type")
    def type_name(self, proposal: Proposal) -> str:
        return type_label(proposal.type)

    @admin.display(description=_("index"), ordering="index__name")
    def index_name(self, proposal: Proposal) -> str:
        return proposal.index.name

    @admin.display(description=_("rests on"))
    def resting_on(self, proposal: Proposal) -> int:
        return len(proposal.sources.all())

    # --- reads are audited -------------------------------------------------------------
    def changelist_view(self, request, extra_context=None):
        response = super().changelist_view(request, extra_context)
        changelist = response.context_data.get("cl") if getattr(response, "context_data", None) else None
        if changelist is not None and response.status_code == 200:
            shown = list(changelist.result_list)
            console_read_audit(
                actor=self.actor(request),
                page="proposals",
                shown=[(source.record_id, proposal.organisation_id) for proposal in shown for source in proposal.sources.all()],
                organisation_id=self.organisation_id(request),
                details={"proposal_ids": [proposal.pk for proposal in shown]},
            )
        return response

    def change_view(self, request, object_id, form_url="", extra_context=None):
        proposal = self.get_object(request, unquote(object_id))
        if not self.has_view_permission(request, proposal):
            raise PermissionDenied
        sources = [source.record for source in proposal.sources.all()]
        context = {
            **self.admin_site.each_context(request),
            "title": _("Proposal %(id)s") % {"id": proposal.pk},
            "subtitle": None,
            "opts": self.opts,
            "original": proposal,
            "proposal": proposal,
            "type": type_label(proposal.type),
            "sources": [
                {
                    "record": record,
                    "url": reverse(f"{self.admin_site.name}:memory_memoryrecord_change", args=[quote(record.pk)]),
                    "person_url": person_url(self.admin_site, record.organisation_id, record.subject) if record.subject else None,
                }
                for record in sources
            ],
            "applied_url": (
                reverse(f"{self.admin_site.name}:memory_memoryrecord_change", args=[quote(proposal.applied_record_id)])
                if proposal.applied_record_id
                else None
            ),
            "decided_by": actor_labels(organisation_id=proposal.organisation_id, actors=[proposal.decided_by])[proposal.decided_by]
            if proposal.decided_by
            else None,
            "may_decide": proposal.status == Proposal.Status.PENDING and self.may_decide(request),
            "decide_url": reverse(f"{self.admin_site.name}:maintenance_proposal_decide", args=[quote(proposal.pk)]),
        }
        console_read_audit(
            actor=self.actor(request),
            page="proposal",
            shown=[(record.pk, record.organisation_id) for record in sources],
            organisation_id=proposal.organisation_id,
            target=proposal.pk,
        )
        return TemplateResponse(request, "admin/maintenance/proposal/proposal_page.html", context)

    def decide_view(self, request, object_id):
        """POST `decision=apply|reject`: through the maintenance services, audited as proposal.applied/rejected."""
        proposal = self.get_object(request, unquote(object_id))
        decision = request.POST.get("decision")
        if request.method != "POST" or decision not in ("apply", "reject") or not self.may_decide(request):
            raise PermissionDenied
        decide = proposal_apply_by_administrator if decision == "apply" else proposal_reject_by_administrator
        try:
            decide(caller=Caller.console(organisation_id=proposal.organisation_id, actor=self.actor(request)), proposal_id=proposal.pk)
        except ApplicationError as error:
            messages.error(request, error.message)
        else:
            messages.success(request, _("The proposal is applied: a shared record now holds it.") if decision == "apply" else _("The proposal is rejected."))
        return HttpResponseRedirect(reverse(f"{self.admin_site.name}:maintenance_proposal_change", args=[quote(proposal.pk)]))
