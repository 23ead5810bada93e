"""Who a console user is, which organisation she administers (R-10.3), and what the console's
home page shows her."""
from __future__ import annotations

import zoneinfo
from dataclasses import dataclass, field
from datetime import datetime

from django.utils import timezone

from audit.selectors import audit_events_counted
from core_memory.console.models import ConsoleAdministrator
from core_memory.organisations.models import Organisation
from extraction.selectors import switch_status, switches_of_organisation
from maintenance.models import Proposal
from maintenance.selectors import proposal_list_for_organisation
from memory.console import CONSOLE_READ
from memory.selectors import records_counted

EVERY_ORGANISATION = None


def administered_organisation_id(*, user) -> str | None:
    """The id of the one organisation the user administers; EVERY_ORGANISATION (None) for a superuser.

    A staff user who is neither a superuser nor bound to an organisation administers
    nothing: the empty string, which matches no organisation.
    """
    if user.is_superuser:
        return EVERY_ORGANISATION
    # The user names her organisation: no scope to read it within.
    administrator = ConsoleAdministrator.objects.unscoped().filter(user_id=user.pk).only("organisation_id").first()
    return administrator.organisation_id if administrator else ""


def administrator_rate_limit(*, user) -> int | None:
    """The requests per minute her organisation allows each of its keys (None: the server's)."""
    organisation_id = administered_organisation_id(user=user)
    if not organisation_id:
        return None
    return Organisation.objects.filter(pk=organisation_id).values_list("rate_limit_per_minute", flat=True).first()


def console_actor(*, user) -> str:
    """The audit actor of a console action (R-11.1: "key id or console user")."""
    return f"console:{user.get_username()}"


@dataclass
class IndexFigures:
    index_id: str
    name: str
    types: dict[str, int] = field(default_factory=dict)
    records: int = 0
    contested: int = 0


@dataclass
class SwitchHealth:
    index_id: str
    name: str
    state: str
    failed_windows: int
    queued_windows: int
    error_code: str | None


@dataclass
class DashboardFigures:
    """The console home's figures (issue 13, item 7)."""

    indexes: list[IndexFigures]
    contested: int
    reads_today: int
    today_from: datetime
    switches: list[SwitchHealth] = field(default_factory=list)
    pending_proposals: int | None = None  # None: every organisation's view (a superuser), not counted

    @property
    def records(self) -> int:
        return sum(index.records for index in self.indexes)

    def summary(self) -> dict:
        """What the page showed, for its `memory.console_read` event (R-10.2)."""
        return {
            "records": {index.index_id: index.types for index in self.indexes},
            "contested": self.contested,
            "reads_today": self.reads_today,
            "extraction": {switch.index_id: switch.state for switch in self.switches},
            "pending_proposals": self.pending_proposals,
        }


def _local_midnight(*, organisation_id: str | None) -> datetime:
    """Today's start in the organisation's time zone (UTC for a superuser's every-organisation view)."""
    zone_name = "UTC"
    if organisation_id is not None:
        zone_name = Organisation.objects.filter(pk=organisation_id).values_list("timezone", flat=True).first() or "UTC"
    try:
        zone = zoneinfo.ZoneInfo(zone_name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        zone = zoneinfo.ZoneInfo("UTC")
    return timezone.localtime(timezone.now(), zone).replace(hour=0, minute=0, second=0, microsecond=0)


def dashboard_figures(*, organisation_id: str | None) -> DashboardFigures:
    """Records per index and type, contested records, the console reads audited today, how each
    extraction switch is doing, and the proposals waiting for a decision.
    `organisation_id` None: every organisation (a superuser)."""
    indexes: dict[str, IndexFigures] = {}
    for row in records_counted(organisation_id=organisation_id):
        entry = indexes.setdefault(row["index_id"], IndexFigures(index_id=row["index_id"], name=row["index_name"]))
        entry.types[row["type"]] = row["records"]
        entry.records += row["records"]
        entry.contested += row["contested"]
    today_from = _local_midnight(organisation_id=organisation_id)
    # A store has at most one switch: a few queries per store, not per record.
    switches = []
    for switch in switches_of_organisation(organisation_id=organisation_id):
        status = switch_status(switch=switch)
        switches.append(
            SwitchHealth(
                index_id=switch.index_id,
                name=switch.index.name,
                state=status.state,
                failed_windows=status.windows["failed"],
                queued_windows=status.windows["queued"],
                error_code=status.error_code,
            )
        )
    pending = None
    if organisation_id is not None:
        pending = proposal_list_for_organisation(organisation=organisation_id, status=Proposal.Status.PENDING).count()
    return DashboardFigures(
        switches=switches,
        pending_proposals=pending,
        indexes=list(indexes.values()),
        contested=sum(index.contested for index in indexes.values()),
        reads_today=audit_events_counted(organisation_id=organisation_id, action=CONSOLE_READ, since=today_from),
        today_from=today_from,
    )
