"""The audit log in the console: read-only for everyone, superusers included.

Every action by its label in the reader's language. Filters by several actions at once or all
but some, by console reads (everyone's, all but the viewer's own, none), by actor and target
(typed in), a date hierarchy; a target is a link to its object while it still exists. An event's
page names its organisation, says who the actor is (a key by its name), and links the records a
console read showed."""
import json
from collections.abc import Iterable

from django.contrib import admin
from django.contrib.admin.utils import quote
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext_lazy as _

from audit.console import CONSOLE_READ
from audit.labels import ACTION_LABELS, action_label
from audit.models import AuditEvent
from core_memory.base.console.pages import ReadOnlyScopedAdmin, TextInputFilter, person_url
from core_memory.base.console.selectors import console_actor
from core_memory.flows.persons import person_known
from core_memory.base.callers import Caller
from core_memory.base.console.times import shown_time
from core_memory.keys.actors import actor_labels
from core_memory.organisations.models import Organisation


class ActorFilter(TextInputFilter):
    title = _("actor")
    parameter_name = "actor"
    field_name = "actor"


class TargetFilter(TextInputFilter):
    title = _("target")
    parameter_name = "target"
    field_name = "target"


ACTIONS_PARAMETER = "action"
LEAVE_OUT_PARAMETER = "leave_out"
READS_PARAMETER = "reads"
READS_NOT_MINE = "not_mine"
READS_NONE = "none"
# The actions whose target names a person (her subject), not an object with an id.
PERSON_ACTIONS = ("person.updated", "person.exported", "person.erased")


class ActionsFilter(admin.ListFilter):
    """Several actions at once (`?action=a&action=b`), all but some (`?leave_out=…`), and console
    reads: everyone's, all but the viewer's own (`?reads=not_mine`) or none (`?reads=none`)."""

    title = _("action")
    template = "admin/audit/auditevent/actions_filter.html"

    def __init__(self, request, params, model, model_admin):
        super().__init__(request, params, model, model_admin)
        for name in self.expected_parameters():
            if name in params:
                self.used_parameters[name] = [value for value in params.pop(name) if value]
        self.viewer = console_actor(user=request.user)

    def expected_parameters(self):
        return [ACTIONS_PARAMETER, LEAVE_OUT_PARAMETER, READS_PARAMETER]

    def has_output(self):
        return True

    def values(self, name: str) -> list[str]:
        return self.used_parameters.get(name) or []

    def choices(self, changelist):
        chosen, left_out, reads = self.values(ACTIONS_PARAMETER), self.values(LEAVE_OUT_PARAMETER), (self.values(READS_PARAMETER) or [""])[-1]
        kept = [(name, values) for name, values in changelist.filter_params.items() if name not in self.expected_parameters()]
        yield {
            "actions": sorted(((action, str(label), action in chosen, action in left_out) for action, label in ACTION_LABELS.items()), key=lambda row: row[1]),
            "reads": [("", _("everyone's"), reads == ""), (READS_NOT_MINE, _("all but mine"), reads == READS_NOT_MINE), (READS_NONE, _("none"), reads == READS_NONE)],
            "kept": kept,
            "active": bool(chosen or left_out or reads),
            "clear_query_string": changelist.get_query_string(remove=self.expected_parameters()),
        }

    def queryset(self, request, queryset):
        chosen, left_out, reads = self.values(ACTIONS_PARAMETER), self.values(LEAVE_OUT_PARAMETER), self.values(READS_PARAMETER)
        if chosen:
            queryset = queryset.filter(action__in=chosen)
        if left_out:
            queryset = queryset.exclude(action__in=left_out)
        if READS_NONE in reads:
            queryset = queryset.exclude(action=CONSOLE_READ)
        elif READS_NOT_MINE in reads:
            queryset = queryset.exclude(action=CONSOLE_READ, actor=self.viewer)
        return queryset


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyScopedAdmin):
    list_display = ("at", "action", "actor", "target")  # the actor column is named (get_list_display)
    list_filter = (ActionsFilter, ActorFilter, TargetFilter)
    search_fields = ("action", "actor", "target")
    date_hierarchy = "at"
    show_full_result_count = False
    # The organisation by id and name: an event may outlive it (no FK constraint).
    fields = ("id", "organisation_name", "moment", "actor_name", "action_name", "target_link", "records_shown", "details_shown")

    def get_list_display(self, request):
        """The actor by name (a key by its name, an administrator as such), each actor looked up once a page."""
        names: dict[tuple[str, str], str] = {}

        @admin.display(description=_("actor"), ordering="actor")
        def actor_shown(event: AuditEvent) -> str:
            known = (event.organisation_id, event.actor)
            if known not in names:
                names[known] = actor_labels(organisation_id=event.organisation_id, actors=[event.actor])[event.actor]
            return names[known]

        @admin.display(description=_("action"), ordering="action")
        def action_shown(event: AuditEvent) -> str:
            return action_label(event.action)

        pages: dict[tuple[str, str, str], str | None] = {}

        @admin.display(description=_("target"), ordering="target")
        def target_shown(event: AuditEvent):
            """The target as a link to its object while it exists (looked up once a page, by kind)."""
            if not event.target:
                return "—"
            if (event.organisation_id, event.action, event.target) not in pages:
                pages.update(self.target_pages(request, events=self.page_events(request, around=event)))
            url = pages.get((event.organisation_id, event.action, event.target))
            shown = format_html('<span class="identifier">{}</span>', event.target)
            return format_html('<a href="{}">{}</a>', url, shown) if url else shown

        return ["at", action_shown, actor_shown, target_shown]

    def page_events(self, request, *, around: AuditEvent) -> list[AuditEvent]:
        """The events of the page being shown (the change list keeps them), else this one."""
        shown = getattr(request, "_console_audit_page", None)
        return shown if shown is not None and around in shown else [around]

    def get_changelist_instance(self, request):
        changelist = super().get_changelist_instance(request)
        request._console_audit_page = list(changelist.result_list)
        return changelist

    def target_pages(self, request, *, events: Iterable[AuditEvent]) -> dict[tuple[str, str, str], str | None]:
        """Each event's target page: an object of the organisation that still exists, by its id's
        prefix (a record, thread, key, store, proposal, webhook, organisation), or a person Core
        still knows. One query per kind of object."""
        pages: dict[tuple[str, str, str], str | None] = {}
        by_kind: dict[str, set[tuple[str, str, str]]] = {}
        for event in events:
            known = (event.organisation_id, event.action, event.target)
            pages[known] = None
            if event.action in PERSON_ACTIONS:
                if person_known(caller=Caller.console(organisation_id=event.organisation_id, actor=console_actor(user=request.user), subject=event.target)):
                    pages[known] = person_url(self.admin_site, event.organisation_id, event.target)
                continue
            by_kind.setdefault(event.target.split("_", 1)[0], set()).add(known)
        registered = {model._meta.pk.default.args[0]: (model, model_admin) for model, model_admin in self.admin_site._registry.items()
                      if getattr(model._meta.pk.default, "args", None)}
        for prefix, targets in by_kind.items():
            if prefix not in registered:
                continue
            model, model_admin = registered[prefix]
            if not model_admin.has_view_permission(request):
                continue
            existing = set(model_admin.get_queryset(request).filter(pk__in={target for _o, _a, target in targets}).values_list("pk", flat=True))
            for known in targets:
                if known[2] in existing:
                    pages[known] = reverse(f"{self.admin_site.name}:{model._meta.app_label}_{model._meta.model_name}_change", args=[quote(known[2])])
        return pages

    @admin.display(description=_("at"), ordering="at")
    def moment(self, event: AuditEvent) -> str:
        return shown_time(event.at, seconds=True)

    @admin.display(description=_("action"))
    def action_name(self, event: AuditEvent) -> str:
        """The label, and the action's identifier the API filters by, marked as such."""
        label = action_label(event.action)
        return label if label == event.action else format_html('{} (<code class="identifier">{}</code>)', label, event.action)

    def get_fields(self, request, obj=None):
        """The target as a link while its object exists and she may see it (which depends on her
        request, so the field is made per request)."""

        @admin.display(description=_("target"))
        def target_link(event: AuditEvent):
            if not event.target:
                return "—"
            url = self.target_pages(request, events=[event]).get((event.organisation_id, event.action, event.target))
            shown = format_html('<span class="identifier">{}</span>', event.target)
            return format_html('<a href="{}">{}</a>', url, shown) if url else shown

        return [target_link if name == "target_link" else name for name in self.fields]

    def get_readonly_fields(self, request, obj=None):
        return self.get_fields(request, obj)

    @admin.display(description=_("details"))
    def details_shown(self, event: AuditEvent):
        return format_html('<pre class="audit-details">{}</pre>', json.dumps(event.details or {}, ensure_ascii=False, indent=2, sort_keys=True))

    @admin.display(description=_("organisation"))
    def organisation_name(self, event: AuditEvent) -> str:
        name = Organisation.objects.filter(pk=event.organisation_id).values_list("name", flat=True).first()
        return f"{name} ({event.organisation_id})" if name else _("%(id)s (no longer exists)") % {"id": event.organisation_id}

    @admin.display(description=_("actor"))
    def actor_name(self, event: AuditEvent) -> str:
        label = actor_labels(organisation_id=event.organisation_id, actors=[event.actor])[event.actor]
        return label if label == event.actor else f"{label} ({event.actor})"

    @admin.display(description=_("records shown"))
    def records_shown(self, event: AuditEvent):
        """The records a console read showed, each linked."""
        record_ids = (event.details or {}).get("record_ids") if event.action == CONSOLE_READ else None
        if not record_ids:
            return "—"
        return format_html_join(
            ", ",
            '<a href="{}">{}</a>',
            ((reverse(f"{self.admin_site.name}:memory_memoryrecord_change", args=[quote(record_id)]), record_id) for record_id in record_ids),
        )
