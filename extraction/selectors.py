"""Reading extraction: a store's switch and how it is doing, its connector, and which
switches are due. The API and the console show a switch through
`switch_status`; nothing here writes."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, Q, QuerySet
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from core_memory.base.callers import Caller
from core_memory.base.errors import NotFound
from core_memory.keys.models import ApiKey
from core_memory.llm.registry import models_offered
from extraction.models import ExtractionConnector, ExtractionRun, ExtractionSwitch, ExtractionWindow
from stores.models import KnowledgeIndex
from stores.selectors import index_find_available, policy_right_check


class SwitchState:
    """A switch's states, in the order they are checked: the first that holds is the state."""

    OFF = "off"
    OBJECTS_MISSING = "objects_missing"
    AUTHOR_UNAVAILABLE = "author_unavailable"
    MODEL_UNAVAILABLE = "model_unavailable"
    ACTIVE = "active"


# What the console calls each state.
STATE_LABELS = {
    SwitchState.ACTIVE: _("active"),
    SwitchState.OFF: _("off"),
    SwitchState.AUTHOR_UNAVAILABLE: _("key unavailable"),
    SwitchState.MODEL_UNAVAILABLE: _("model unavailable"),
    SwitchState.OBJECTS_MISSING: _("connector or index missing"),
}


@dataclass(frozen=True)
class SwitchStatus:
    """What `GET …/extraction` shows beside the switch's settings."""

    state: str
    last_run: dict | None
    windows: dict
    error_code: str | None


def switch_find(*, index: KnowledgeIndex) -> ExtractionSwitch | None:
    """The index's switch, if it has one."""
    return (
        ExtractionSwitch.objects.for_organisation(index.organisation_id)
        .select_related("connector", "index", "organisation")
        .filter(index_id=index.pk)
        .first()
    )


def switch_state(*, switch: ExtractionSwitch, now: datetime | None = None) -> str:
    """The switch's state (`SwitchState`). Checks only these things: a key that still exists but lost `threads` or its
    write right leaves the switch active, and its windows fail instead."""
    if not switch.enabled:
        return SwitchState.OFF
    index = switch.index
    if switch.connector.deleted_at is not None or index.deleted_at is not None or index.pipeline != KnowledgeIndex.Pipeline.MEMORY:
        return SwitchState.OBJECTS_MISSING
    author = ApiKey.objects.for_organisation(switch.organisation_id).filter(pk=switch.author_key_id).first()
    now = now or timezone.now()
    if author is None or author.revoked_at is not None or (author.expires_at is not None and author.expires_at <= now):
        return SwitchState.AUTHOR_UNAVAILABLE
    if switch.model not in {model["id"] for model in models_offered(organisation=switch.organisation)}:
        return SwitchState.MODEL_UNAVAILABLE
    return SwitchState.ACTIVE


def switch_window_counts(*, switch: ExtractionSwitch) -> dict:
    """The switch's windows by status; a window being read counts as queued."""
    statuses = ExtractionWindow.Status
    counts = (
        ExtractionWindow.objects.for_organisation(switch.organisation_id)
        .filter(switch_id=switch.pk)
        .aggregate(
            ready=Count("pk", filter=Q(status=statuses.READY)),
            failed=Count("pk", filter=Q(status=statuses.FAILED)),
            queued=Count("pk", filter=Q(status__in=[statuses.QUEUED, statuses.RUNNING])),
            parked=Count("pk", filter=Q(status=statuses.PARKED)),
        )
    )
    return counts


def switch_windows(*, switch: ExtractionSwitch, status: str | None = None) -> QuerySet[ExtractionWindow]:
    """The switch's windows (of one status), newest first, with their threads: for a page that
    lists what failed and why (`error_code`, `error_message`, `attempts`, tokens)."""
    windows = ExtractionWindow.objects.for_organisation(switch.organisation_id).filter(switch_id=switch.pk)
    if status is not None:
        windows = windows.filter(status=status)
    return windows.select_related("thread").order_by("-queued_at", "-id")


def switch_error_code(*, switch: ExtractionSwitch) -> str | None:
    """The most common reason among the failed windows; of two as common, the first
    in the alphabet, so the answer does not change between two reads."""
    codes = Counter(
        ExtractionWindow.objects.for_organisation(switch.organisation_id)
        .filter(switch_id=switch.pk, status=ExtractionWindow.Status.FAILED)
        .values_list("error_code", flat=True)
    )
    if not codes:
        return None
    return min(codes, key=lambda code: (-codes[code], code))


def switch_last_run(*, switch: ExtractionSwitch) -> dict | None:
    runs = ExtractionRun.objects.for_organisation(switch.organisation_id).filter(switch_id=switch.pk)
    run = runs.order_by("-started_at", "-id").first()
    if run is None:
        return None
    return {
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "written": run.written,
        "confirmed": run.confirmed,
        "replaced": run.replaced,
        "errors": run.errors,
    }


def switch_status(*, switch: ExtractionSwitch, now: datetime | None = None) -> SwitchStatus:
    return SwitchStatus(
        state=switch_state(switch=switch, now=now),
        last_run=switch_last_run(switch=switch),
        windows=switch_window_counts(switch=switch),
        error_code=switch_error_code(switch=switch),
    )


def connector_get_available(*, caller: Caller, connector_id: str, right: str | None = None) -> ExtractionConnector:
    """A connector that is not deleted, of an index available to the caller's key; else 404, as
    for any object the key may not see."""
    connector = (
        ExtractionConnector.objects.for_organisation(caller.organisation_id).live().filter(pk=connector_id).first()
        if isinstance(connector_id, str)
        else None
    )
    if connector is None or index_find_available(caller=caller, index_id=connector.index_id) is None:
        raise NotFound("No such connector.")
    policy_right_check(caller=caller, index_id=connector.index_id, right=right)
    return connector


def switches_due(*, now: datetime) -> list[str]:
    """Index ids of the enabled switches whose next run is due, across organisations."""
    return list(
        ExtractionSwitch.objects.unscoped()
        .filter(enabled=True)
        .filter(Q(next_run_at__isnull=True) | Q(next_run_at__lte=now))
        .order_by("next_run_at")
        .values_list("index_id", flat=True)
    )


def switches_naming_agent(*, caller: Caller, agent_id: str) -> list[str]:
    """Index ids of the organisation's switches whose `filters.agent_ids` name the agent (deleting an agent they name is refused)."""
    return list(
        ExtractionSwitch.objects.for_organisation(caller.organisation_id)
        .filter(filter_agent_ids__contains=[agent_id])
        .order_by("index_id")
        .values_list("index_id", flat=True)
    )


def switches_existing(*, index_ids: list[str]) -> list[str]:
    """Which of `index_ids` have a switch, across organisations (the operator's command)."""
    return list(ExtractionSwitch.objects.unscoped().filter(index_id__in=index_ids).values_list("index_id", flat=True))


def person_windows_counted(*, caller: Caller, subject: str) -> int:
    """How many extraction windows her threads have (what erasing her removes)."""
    return ExtractionWindow.objects.for_organisation(caller.organisation_id).filter(thread__subject=subject).count()


def switches_of_organisation(*, caller: Caller) -> list[ExtractionSwitch]:
    """Every switch of the organisation, with its index, by index name."""
    return _switches_listed(ExtractionSwitch.objects.for_organisation(caller.organisation_id))


def platform_switches() -> list[ExtractionSwitch]:
    """Every switch of every organisation, with its index, by index name (a console superuser's dashboard)."""
    return _switches_listed(ExtractionSwitch.objects.unscoped())


def _switches_listed(switches) -> list[ExtractionSwitch]:
    return list(switches.select_related("connector", "index", "organisation").order_by("index__name", "index_id"))
