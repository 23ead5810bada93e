"""Proposals in the console: the queue of suggestions to
share a person's fact, each with the records it rests on, applied or rejected through
`proposal_apply_by_administrator` / `proposal_reject_by_administrator` (audited there) — applied
as it is or with its type, text and confidence changed first, or several decided at once from the
queue (`proposals_decide_by_administrator`), each after a page that shows what will happen.
Reading the queue or a proposal is a console read. Who may read her organisation's records may
read its proposals; who may correct records may decide them.
"""
from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import formats
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from audit.console import console_read_audit
from core_memory.base.console.pages import ReadOnlyScopedAdmin, person_url
from core_memory.base.errors import ApplicationError
from core_memory.keys.actors import actor_labels
from core_memory.base.callers import Caller
from maintenance.models import Proposal
from maintenance.selectors import proposal_list_for_organisation
from maintenance.services.proposals import (
    proposal_apply_by_administrator,
    proposal_changes,
    proposal_reject_by_administrator,
    proposals_decide_by_administrator,
)
from memory.models import type_label
from memory.selectors import store_known_types

CONFIRMED = "confirmed"
BULK_CONFIRMED = "post"  # the confirmation page's answer, as Django's own delete_selected names it


class ProposalChangesForm(forms.Form):
    """A proposal's type, text and confidence as the administrator words them before applying; the
    service checks them as a record's write is checked."""

    text = forms.CharField(label=_("text"), widget=forms.Textarea(attrs={"rows": 4}))
    type = forms.ChoiceField(label=_("type"))
    confidence = forms.FloatField(label=_("confidence"), widget=forms.NumberInput(attrs={"step": "0.01"}))

    def __init__(self, *args, proposal: Proposal, **kwargs):
        super().__init__(*args, initial={"text": proposal.text, "type": proposal.type, "confidence": proposal.confidence}, **kwargs)
        known = store_known_types(index=proposal.index)
        self.fields["type"].choices = [(name, type_label(name)) for name in dict.fromkeys([proposal.type, *known])]


@admin.register(Proposal)
class ProposalAdmin(ReadOnlyScopedAdmin):
    list_display = ("text", "type_name", "reason", "status", "index_name", "resting_on", "created_at")
    list_filter = ("status", "reason")
    ordering = ("-id",)
    show_full_result_count = False
    actions = ("apply_proposals", "reject_proposals")

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
            return proposal_list_for_organisation(caller=self.caller(request, organisation_id))
        return super().get_queryset(request).live().select_related("index").prefetch_related("sources__record")

    def get_urls(self):
        wrap = self.admin_site.admin_view
        return [
            path("<path:object_id>/decide/", wrap(self.decide_view), name="maintenance_proposal_decide"),
            path("<path:object_id>/apply-changed/", wrap(self.apply_changed_view), name="maintenance_proposal_apply_changed"),
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
        return self.proposal_page(request, proposal)

    def proposal_page(self, request, proposal: Proposal, changes_form: ProposalChangesForm | None = None):
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
            "changes_form": changes_form or ProposalChangesForm(proposal=proposal),
            "apply_changed_url": reverse(f"{self.admin_site.name}:maintenance_proposal_apply_changed", args=[quote(proposal.pk)]),
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

    def apply_changed_view(self, request, object_id):
        """POST: the proposal applied with its type, text and confidence as edited on its page. First
        a page that shows what changes; applied when that page is confirmed, through the service
        (audited as `proposal.edited` and `proposal.applied`)."""
        proposal = self.get_object(request, unquote(object_id))
        if request.method != "POST" or not self.may_decide(request):
            raise PermissionDenied
        form = ProposalChangesForm(request.POST, proposal=proposal)
        administrator = Caller.console(organisation_id=proposal.organisation_id, actor=self.actor(request))
        page = reverse(f"{self.admin_site.name}:maintenance_proposal_change", args=[quote(proposal.pk)])
        changes = None
        if form.is_valid():
            try:
                changes = proposal_changes(caller=administrator, proposal_id=proposal.pk, changes=form.cleaned_data)
            except ApplicationError as error:
                form.add_error(error.param if error.param in form.fields else None, error.message)
        if changes is None:
            return self.proposal_page(request, proposal, form)
        if request.POST.get(CONFIRMED) != "1":
            context = {
                **self.admin_site.each_context(request),
                "title": _("Apply proposal %(id)s with these changes?") % {"id": proposal.pk},
                "subtitle": None,
                "opts": self.opts,
                "proposal": proposal,
                "form": form,
                "changes": [(form.fields[field].label, self.shown(field, now), self.shown(field, then)) for field, (now, then) in changes.items()],
                "page_url": page,
            }
            return TemplateResponse(request, "admin/maintenance/proposal/apply_changed_confirm.html", context)
        try:
            proposal_apply_by_administrator(caller=administrator, proposal_id=proposal.pk, changes={field: then for field, (_now, then) in changes.items()})
        except ApplicationError as error:
            messages.error(request, error.message)
        else:
            messages.success(request, _("The proposal is applied as you changed it: a shared record now holds it."))
        return HttpResponseRedirect(page)

    @staticmethod
    def shown(field: str, value) -> str:
        if field == "type":
            return str(type_label(value))
        if field == "confidence":
            return formats.number_format(value, 2)
        return value

    # --- several at once ---------------------------------------------------------------------
    def get_actions(self, request):
        actions = super().get_actions(request)
        return actions if self.may_decide(request) else {}

    @admin.action(description=_("Apply the selected proposals"))
    def apply_proposals(self, request, queryset):
        return self.decide_selected(request, queryset, apply=True)

    @admin.action(description=_("Reject the selected proposals"))
    def reject_proposals(self, request, queryset):
        return self.decide_selected(request, queryset, apply=False)

    BULK_LIMIT = 200  # the most proposals one decision takes

    def decide_selected(self, request, queryset, *, apply: bool):
        """After a page that lists the pending ones among those selected (the others are left out):
        each applied or rejected as on its own page, audited each; all of them or none."""
        if not self.may_decide(request):
            raise PermissionDenied
        selected = list(queryset.order_by("-id")[: self.BULK_LIMIT])
        pending = [proposal for proposal in selected if proposal.status == Proposal.Status.PENDING]
        if not pending:
            messages.warning(request, _("None of the selected proposals is pending: there is nothing to decide."))
            return None
        if request.POST.get(BULK_CONFIRMED) != "yes":
            shown = [(source.record_id, proposal.organisation_id) for proposal in pending for source in proposal.sources.all()]
            console_read_audit(
                actor=self.actor(request), page="bulk-decide", shown=shown, organisation_id=self.organisation_id(request),
                details={"proposal_ids": [proposal.pk for proposal in pending]},
            )
            context = {
                **self.admin_site.each_context(request),
                "title": _("Apply these proposals?") if apply else _("Reject these proposals?"),
                "subtitle": None,
                "opts": self.opts,
                "proposals": [(proposal, type_label(proposal.type)) for proposal in pending],
                "left_out": len(selected) - len(pending),
                "applying": apply,
                "action": "apply_proposals" if apply else "reject_proposals",
                "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME,
                "changelist_url": reverse(f"{self.admin_site.name}:maintenance_proposal_changelist"),
            }
            return TemplateResponse(request, "admin/maintenance/proposal/bulk_decide.html", context)
        administrator = Caller.console(organisation_id=self.organisation_id(request) or selected[0].organisation_id, actor=self.actor(request))
        try:
            decided = proposals_decide_by_administrator(caller=administrator, proposal_ids=[proposal.pk for proposal in pending], apply=apply)
        except ApplicationError as error:
            messages.error(request, error.message)
            return None
        count = len(decided)
        if apply:
            messages.success(request, ngettext("%(count)d proposal applied.", "%(count)d proposals applied.", count) % {"count": count})
        else:
            messages.success(request, ngettext("%(count)d proposal rejected.", "%(count)d proposals rejected.", count) % {"count": count})
        return None
