"""Persons in the console: the persons Core knows in her organisation, and a
page per person — her records by section as injection sees them, her episodes and lessons, her
threads, her rules (editable), and two actions: export everything Core holds about her (the
API's document, core_memory.flows.export), and erase her (a confirmation page with the counts
that will go, then the receipt).

Every page is a read and writes `memory.console_read`; rules change through
`person_update` and erasure through `core_memory.flows.erasure.person_erase`, each audited.
A person's address is her organisation and her subject, so a superuser's pages work across
organisations and an administrator gets a 404 for another organisation's person.
"""
from __future__ import annotations

from datetime import timezone as dt_timezone


from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponseRedirect, JsonResponse
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.text import slugify
from django.utils.translation import gettext_lazy as _

from audit.console import console_read_audit
from core_memory.base.console.pages import OrganisationScopedAdmin, thread_url
from core_memory.base.console.selectors import EVERY_ORGANISATION
from core_memory.flows.erasure import person_erase, person_erasure_preview
from core_memory.flows.export import person_export
from core_memory.flows.persons import person_known, persons_page, platform_persons_page
from core_memory.base.callers import Caller
from core_memory.organisations.models import Organisation
from core_memory.persons.models import Person
from core_memory.persons.selectors import person_rules
from core_memory.persons.services import person_update
from core_memory.threads.selectors import person_threads
from memory.models import type_label
from memory.selectors import PERSON_SECTIONS, organisation_default_half_lives, person_records_in_sections

PERSONS_PER_PAGE = 50
RECORDS_PER_SECTION = 50
THREADS_SHOWN = 50
SECTION_TITLES = {
    "commitments": _("Commitments"),
    "behaviour": _("Behaviour rules"),
    "about_this_person": _("About this person"),
    "lessons": _("Lessons"),
    "past_sessions": _("Episodes (past sessions)"),
}

# What an erasure's receipt counts (core_memory.flows.erasure.person_erase), as the console names it.
RECEIPT_LABELS = {
    "records": _("records"),
    "episodes": _("episodes"),
    "lessons": _("lessons"),
    "proposals": _("proposals"),
    "threads": _("conversations"),
    "thread_placeholders": _("threads whose placeholders' real values went"),
    "extraction_windows": _("extraction windows"),
    "maintenance_jobs": _("maintenance jobs"),
    "subject_tokens": _("subject tokens"),
    "webhook_events": _("webhook events about this person"),
    "idempotent_answers": _("stored API answers"),
    "console_actions": _("console action log entries"),
    "audit_events_scrubbed": _("audit events cleared of this person's details"),
}


class RulesForm(forms.Form):
    helper_model_may_read = forms.BooleanField(
        label=_("The helper model may read this person's conversations and records"),
        required=False,
        help_text=_("Off: nothing of this person's is sent to the organisation's helper model (store lessons, analyses)."),
    )


@admin.register(Person)
class PersonAdmin(OrganisationScopedAdmin):
    """No model form: the list and the pages are the console's own views over Core's persons."""

    def has_add_permission(self, request):
        return False  # persons exist once named

    def get_urls(self):
        wrap = self.admin_site.admin_view
        return [
            path("", wrap(self.changelist_view), name="persons_person_changelist"),
            path("<str:organisation_id>/<str:subject>/", wrap(self.person_view), name="persons_person_page"),
            path("<str:organisation_id>/<str:subject>/rules/", wrap(self.rules_view), name="persons_person_rules"),
            path("<str:organisation_id>/<str:subject>/export/", wrap(self.export_view), name="persons_person_export"),
            path("<str:organisation_id>/<str:subject>/erase/", wrap(self.erase_view), name="persons_person_erase"),
        ]

    # --- who and which organisation ------------------------------------------------------------
    def person_organisation(self, request, organisation_id: str) -> Organisation:
        """The person's organisation when she may administer it; 404 otherwise."""
        organisation = self.scope(Organisation.objects.all(), request).filter(pk=organisation_id).first()
        if organisation is None:
            raise Http404(_("No such person."))
        return organisation

    def page_context(self, request, **context) -> dict:
        return {**self.admin_site.each_context(request), "opts": self.opts, "subtitle": None, **context}

    def urls_of(self, organisation_id: str, subject: str) -> dict[str, str]:
        arguments = [organisation_id, quote(subject)]
        return {
            name: reverse(f"{self.admin_site.name}:persons_person_{name}", args=arguments)
            for name in ("page", "rules", "export", "erase")
        }

    # --- the list --------------------------------------------------------------------------------
    def changelist_view(self, request, extra_context=None):
        if not self.has_view_permission(request):
            raise PermissionDenied
        search = request.GET.get("q", "").strip()
        try:
            page_number = max(1, int(request.GET.get("p", "1")))
        except ValueError:
            page_number = 1
        organisation_id = self.organisation_id(request)
        page = {"search": search, "offset": (page_number - 1) * PERSONS_PER_PAGE, "limit": PERSONS_PER_PAGE}
        if organisation_id is EVERY_ORGANISATION:
            persons, has_more = platform_persons_page(actor=self.actor(request), **page)
        else:
            persons, has_more = persons_page(caller=self.caller(request, organisation_id), **page)
        rows = [
            {
                "person": person,
                "url": self.urls_of(person.organisation_id, person.subject)["page"],
                "types": [(type_label(name), count) for name, count in sorted(person.records_per_type.items())],
            }
            for person in persons
        ]
        console_read_audit(
            actor=self.actor(request),
            page="persons",
            shown=[],
            organisation_id=self.organisation_id(request),
            details={"subjects": [person.subject for person in persons], "search": search, "page_number": page_number},
        )
        context = self.page_context(
            request,
            title=_("Persons"),
            rows=rows,
            search=search,
            page_number=page_number,
            previous_page=page_number - 1 if page_number > 1 else None,
            next_page=page_number + 1 if has_more else None,
            every_organisation=self.organisation_id(request) is None,
        )
        return TemplateResponse(request, "admin/persons/person/person_list.html", context)

    # --- a person's page -------------------------------------------------------------------------
    def person_view(self, request, organisation_id: str, subject: str):
        if not self.has_view_permission(request):
            raise PermissionDenied
        organisation = self.person_organisation(request, organisation_id)
        subject = unquote(subject)
        if not person_known(caller=Caller.console(organisation_id=organisation.id, actor=self.actor(request), subject=subject)):
            raise Http404(_("No such person."))
        administrator = self.caller(request, organisation.id)
        half_lives = organisation_default_half_lives(caller=administrator)
        sections = person_records_in_sections(
            caller=administrator, subject=subject, half_life_days=half_lives, limit=RECORDS_PER_SECTION
        )
        threads = person_threads(caller=administrator, subject=subject, limit=THREADS_SHOWN)
        rules = person_rules(caller=administrator, subjects=[subject]).get(subject)
        shown = [record for records in sections.values() for record in records[:RECORDS_PER_SECTION]]
        records_url = reverse(f"{self.admin_site.name}:memory_memoryrecord_changelist")
        context = self.page_context(
            request,
            title=_("Person %(subject)s") % {"subject": subject},
            subject=subject,
            organisation=organisation,
            urls=self.urls_of(organisation.id, subject),
            sections=[
                {
                    "name": name,
                    "title": SECTION_TITLES[name],
                    "records": sections[name][:RECORDS_PER_SECTION],
                    "more": len(sections[name]) > RECORDS_PER_SECTION,
                }
                for name in PERSON_SECTIONS
            ],
            all_records_url=f"{records_url}?person={quote(subject)}",
            threads=[{"thread": thread, "url": thread_url(self.admin_site, thread.id)} for thread in threads[:THREADS_SHOWN]],
            more_threads=len(threads) > THREADS_SHOWN,
            rules_form=RulesForm(initial={"helper_model_may_read": rules.helper_model_may_read if rules else True}),
            half_lives=[(type_label(name), days) for name, days in half_lives.items()],
            may_change=self.has_change_permission(request),
            may_erase=self.has_delete_permission(request),
        )
        console_read_audit(
            actor=self.actor(request),
            page="person",
            shown=[(record.pk, record.organisation_id) for record in shown],
            organisation_id=organisation.id,
            target=subject,
            details={"thread_ids": [thread.id for thread in threads[:THREADS_SHOWN]]},
        )
        return TemplateResponse(request, "admin/persons/person/person_page.html", context)

    def rules_view(self, request, organisation_id: str, subject: str):
        """POST: her rules, through person_update (audited `person.updated`)."""
        if request.method != "POST" or not self.has_change_permission(request):
            raise PermissionDenied
        organisation = self.person_organisation(request, organisation_id)
        subject = unquote(subject)
        form = RulesForm(request.POST)
        form.is_valid()  # a lone checkbox: absent is False, anything else True
        person_update(
            caller=self.caller(request, organisation.id),
            organisation=organisation,
            subject=subject,
            helper_model_may_read=form.cleaned_data["helper_model_may_read"],
        )
        messages.success(request, _("The rules are saved."))
        return HttpResponseRedirect(self.urls_of(organisation.id, subject)["page"])

    # --- export --------------------------------------------------------------------------------------
    def export_view(self, request, organisation_id: str, subject: str):
        """Everything Core holds about her as one JSON file: the API's document
        (`GET /v1/persons/{subject}/export`, core_memory.flows.export), audited as `person.exported`
        and, as every console read, `memory.console_read` naming the records it held."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        organisation = self.person_organisation(request, organisation_id)
        subject = unquote(subject)
        # The API's document to the letter, its times in UTC, whatever zone the console shows.
        with timezone.override(dt_timezone.utc):
            document = person_export(caller=Caller.console(organisation_id=organisation.id, actor=self.actor(request), subject=subject))
        record_ids = [record["id"] for part in ("records", "episodes", "lessons") for record in document.get(part) or []]
        console_read_audit(
            actor=self.actor(request),
            page="export",
            shown=[(record_id, organisation.id) for record_id in record_ids],
            organisation_id=organisation.id,
            target=subject,
            details={"thread_ids": [thread["id"] for thread in document.get("threads") or []]},
        )
        response = JsonResponse(document, json_dumps_params={"ensure_ascii": False, "indent": 2})
        filename = f"core-geheugen-{organisation.id}-{slugify(subject) or 'person'}.json"
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response

    # --- erasure -------------------------------------------------------------------------------------
    def erase_view(self, request, organisation_id: str, subject: str):
        """GET: what erasing her will remove; POST: erase her and show the receipt."""
        if not self.has_delete_permission(request):
            raise PermissionDenied
        organisation = self.person_organisation(request, organisation_id)
        subject = unquote(subject)
        urls = self.urls_of(organisation.id, subject)
        if request.method == "POST":
            receipt = person_erase(caller=self.caller(request, organisation.id), subject=subject)
            context = self.page_context(
                request,
                title=_("Person %(subject)s is erased") % {"subject": subject},
                subject=subject,
                receipt=receipt,
                receipt_rows=[(RECEIPT_LABELS.get(name, name), count) for name, count in receipt["erased"].items()],
                persons_url=reverse(f"{self.admin_site.name}:persons_person_changelist"),
            )
            return TemplateResponse(request, "admin/persons/person/erase_receipt.html", context)
        preview = person_erasure_preview(caller=self.caller(request, organisation.id), subject=subject)
        console_read_audit(
            actor=self.actor(request),
            page="erase",
            shown=[],
            organisation_id=organisation.id,
            target=subject,
            details={"counts": preview},
        )
        # As the API's erasure of a person never named (a 200 that erases nothing), no 404: the page
        # says plainly that Core holds nothing about her, and offers nothing to confirm.
        held = any(value for name, value in preview.items() if name != "subject")
        context = self.page_context(
            request,
            title=(_("Erase person %(subject)s?") if held else _("Nothing to erase about %(subject)s")) % {"subject": subject},
            subject=subject,
            urls=urls,
            held=held,
            persons_url=reverse(f"{self.admin_site.name}:persons_person_changelist"),
            preview=preview,
            records_per_type=[(type_label(name), count) for name, count in preview["records_per_type"].items()],
            records_total=sum(preview["records_per_type"].values()),
        )
        return TemplateResponse(request, "admin/persons/person/erase_confirm.html", context)
