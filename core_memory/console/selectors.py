"""What the console's home page shows an administrator, and her organisation's zone and rate limit
(who she is and which organisation she administers: core_memory.base.console.selectors)."""
from __future__ import annotations

import zoneinfo
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from django.utils import timezone

from audit.console import CONSOLE_READ
from audit.selectors import audit_events_counted, platform_audit_events_counted
from core_memory.base.callers import Caller
from core_memory.base.console.selectors import administered_organisation_id
from core_memory.llm.metering import usage_month
from core_memory.llm.models import TokenUsage
from core_memory.organisations.models import Organisation
from extraction.selectors import platform_switches, switch_status, switches_of_organisation
from maintenance.models import Proposal
from maintenance.selectors import proposal_list_for_organisation
from memory.selectors import platform_records_counted, platform_records_created_per_week, records_counted, records_created_per_week

GROWTH_WEEKS = 8  # the dashboard's growth chart: records created per week, this many weeks back


def administrator_rate_limit(*, user) -> int | None:
    """The requests per minute her organisation allows each of its keys (None: the server's)."""
    organisation_id = administered_organisation_id(user=user)
    if not organisation_id:
        return None
    return Organisation.objects.filter(pk=organisation_id).values_list("rate_limit_per_minute", flat=True).first()


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
    windows: dict[str, int]
    error_code: str | None

    @property
    def failed_windows(self) -> int:
        return self.windows.get("failed", 0)

    @property
    def queued_windows(self) -> int:
        return self.windows.get("queued", 0)


@dataclass
class Bar:
    """One bar of a dashboard chart: what it counts, how many, and its length in percent of the longest."""

    key: object
    value: int
    percent: int


def bars(values) -> list[Bar]:
    values = list(values)
    longest = max((value for _key, value in values), default=0) or 1
    return [Bar(key=key, value=value, percent=round(100 * value / longest)) for key, value in values]


@dataclass
class DashboardFigures:
    """The console home's figures."""

    indexes: list[IndexFigures]
    contested: int
    reads_today: int
    today_from: datetime
    switches: list[SwitchHealth] = field(default_factory=list)
    pending_proposals: int | None = None  # None: every organisation's view (a superuser), not counted
    weeks: list[tuple[date, int]] = field(default_factory=list)  # records created per week, oldest first
    tokens_used: int | None = None  # this month's; None: every organisation's view
    token_limit: int | None = None

    @property
    def types(self) -> dict[str, int]:
        """Active records per type over every index."""
        totals: dict[str, int] = {}
        for index in self.indexes:
            for type_name, count in index.types.items():
                totals[type_name] = totals.get(type_name, 0) + count
        return dict(sorted(totals.items(), key=lambda item: -item[1]))

    @property
    def type_bars(self) -> list[Bar]:
        return bars(self.types.items())

    @property
    def week_bars(self) -> list[Bar]:
        return bars(self.weeks)

    @property
    def index_bars(self) -> list[Bar]:
        return bars((index, index.records) for index in self.indexes)

    @property
    def windows(self) -> dict[str, int]:
        """Extraction windows per state over every switch."""
        totals = {"ready": 0, "queued": 0, "failed": 0, "parked": 0}
        for switch in self.switches:
            for state, count in switch.windows.items():
                totals[state] = totals.get(state, 0) + count
        return totals

    @property
    def token_warning(self) -> bool:
        """Nine tenths of the monthly limit used: turns and extraction stop at the limit."""
        return (self.token_percent or 0) >= 90

    @property
    def token_percent(self) -> int | None:
        if self.tokens_used is None or not self.token_limit:
            return None
        return min(100, round(100 * self.tokens_used / self.token_limit))

    @property
    def records(self) -> int:
        return sum(index.records for index in self.indexes)

    def summary(self) -> dict:
        """What the page showed, for its `memory.console_read` event."""
        return {
            "records": {index.index_id: index.types for index in self.indexes},
            "contested": self.contested,
            "reads_today": self.reads_today,
            "extraction": {switch.index_id: switch.state for switch in self.switches},
            "pending_proposals": self.pending_proposals,
        }


def organisation_zone(*, caller: Caller) -> zoneinfo.ZoneInfo:
    """The organisation's time zone (UTC when it names none Python knows)."""
    zone_name = Organisation.objects.filter(pk=caller.organisation_id).values_list("timezone", flat=True).first() or "UTC"
    try:
        return zoneinfo.ZoneInfo(zone_name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return zoneinfo.ZoneInfo("UTC")


def _local_midnight(zone: zoneinfo.ZoneInfo) -> datetime:
    return timezone.localtime(timezone.now(), zone).replace(hour=0, minute=0, second=0, microsecond=0)


def dashboard_figures(*, caller: Caller) -> DashboardFigures:
    """The organisation's records per index and type, contested records, the console reads
    audited today (but the caller's own: her browsing is no news to her), how each extraction
    switch is doing, the records created per week, the proposals waiting for a decision and the
    tokens used this month."""
    zone = organisation_zone(caller=caller)
    today_from = _local_midnight(zone)
    first_week = _first_week(today_from)
    figures = _figures(
        counted=records_counted(caller=caller),
        switches=switches_of_organisation(caller=caller),
        created=records_created_per_week(caller=caller, since=first_week, zone=zone),
        reads_today=audit_events_counted(caller=caller, action=CONSOLE_READ, since=today_from, excluding_actor=caller.actor),
        today_from=today_from,
    )
    figures.pending_proposals = proposal_list_for_organisation(caller=caller, status=Proposal.Status.PENDING).count()
    figures.tokens_used = TokenUsage.objects.for_organisation(caller.organisation_id).month_total(month=usage_month())
    figures.token_limit = Organisation.objects.filter(pk=caller.organisation_id).values_list("monthly_token_limit", flat=True).first()
    return figures


def platform_dashboard_figures() -> DashboardFigures:
    """`dashboard_figures` across every organisation, in UTC (a console superuser's home page):
    no proposals or tokens, which are each organisation's own."""
    zone = zoneinfo.ZoneInfo("UTC")
    today_from = _local_midnight(zone)
    return _figures(
        counted=platform_records_counted(),
        switches=platform_switches(),
        created=platform_records_created_per_week(since=_first_week(today_from), zone=zone),
        reads_today=platform_audit_events_counted(action=CONSOLE_READ, since=today_from),
        today_from=today_from,
    )


def _first_week(today_from: datetime) -> datetime:
    this_week = today_from - timedelta(days=today_from.weekday())
    return this_week - timedelta(weeks=GROWTH_WEEKS - 1)


def _figures(*, counted: list[dict], switches: list, created: list, reads_today: int, today_from: datetime) -> DashboardFigures:
    indexes: dict[str, IndexFigures] = {}
    for row in counted:
        entry = indexes.setdefault(row["index_id"], IndexFigures(index_id=row["index_id"], name=row["index_name"]))
        entry.types[row["type"]] = row["records"]
        entry.records += row["records"]
        entry.contested += row["contested"]
    # A store has at most one switch: a few queries per store, not per record.
    healths = []
    for switch in switches:
        status = switch_status(switch=switch)
        healths.append(
            SwitchHealth(index_id=switch.index_id, name=switch.index.name, state=status.state, windows=dict(status.windows), error_code=status.error_code)
        )
    first_week = _first_week(today_from)
    per_week = {week.date(): count for week, count in created}
    weeks = [(week.date(), per_week.get(week.date(), 0)) for week in (first_week + timedelta(weeks=n) for n in range(GROWTH_WEEKS))]
    return DashboardFigures(
        switches=healths,
        pending_proposals=None,
        weeks=weeks,
        tokens_used=None,
        token_limit=None,
        indexes=list(indexes.values()),
        contested=sum(index.contested for index in indexes.values()),
        reads_today=reads_today,
        today_from=today_from,
    )
