"""The audit log in the console: read-only for everyone, superusers included.

Filters by action, actor and target (typed in), a date hierarchy; an event's page names its
organisation, says who the actor is (a key by its name), and links the records a console
read showed."""
import json

from django.contrib import admin
from django.contrib.admin.utils import quote
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext_lazy as _

from audit.console import CONSOLE_READ
from audit.models import AuditEvent
from core_memory.base.console.pages import ReadOnlyScopedAdmin, TextInputFilter
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


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyScopedAdmin):
    list_display = ("at", "action", "actor", "target")  # the actor column is named (get_list_display)
    list_filter = ("action", ActorFilter, TargetFilter)
    search_fields = ("action", "actor", "target")
    date_hierarchy = "at"
    show_full_result_count = False
    # The organisation by id and name: an event may outlive it (no FK constraint).
    fields = ("id", "organisation_name", "moment", "actor_name", "action", "target", "records_shown", "details_shown")
    readonly_fields = fields

    def get_list_display(self, request):
        """The actor by name (a key by its name, an administrator as such), each actor looked up once a page."""
        names: dict[tuple[str, str], str] = {}

        @admin.display(description=_("actor"), ordering="actor")
        def actor_shown(event: AuditEvent) -> str:
            known = (event.organisation_id, event.actor)
            if known not in names:
                names[known] = actor_labels(organisation_id=event.organisation_id, actors=[event.actor])[event.actor]
            return names[known]

        return ["at", "action", actor_shown, "target"]

    @admin.display(description=_("at"), ordering="at")
    def moment(self, event: AuditEvent) -> str:
        return shown_time(event.at, seconds=True)

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
