"""Planning a switch's run: which threads it reads, cut into windows, and handing
out again the windows that wait (parked at the limit, re-queued, or left by a dead worker).

A run is planned under a row lock on its switch, so two dispatchers (or beat and
`run_extraction`) never plan one switch twice; a thread's unread items are copied into
windows and its cursor moved past them in the same transaction.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from core_memory.base.work.claims import work_resumed
from core_memory.base.work.dispatch import Dispatch, Dispatcher
from core_memory.llm.metering import token_limit_reached
from core_memory.pii.selectors import ReadMode, thread_read_mode
from core_memory.threads.models import Item, Thread
from extraction.models import ExtractionCursor, ExtractionRun, ExtractionSwitch, ExtractionWindow
from extraction.selectors import SwitchState, switch_state, switches_due

logger = logging.getLogger(__name__)

# A thread is read once it has been quiet this long; a gap this long ends a session.
QUIET_PERIOD = timedelta(minutes=30)
MAX_ATTEMPTS = 3
# Failures worth a new attempt at the next run, while attempts last.
TRANSIENT_FAILURES = ("model_error", "write_conflict")


@dataclass(frozen=True)
class RunPlan:
    index_id: str
    state: str
    run_id: str | None = None
    window_ids: list[str] = field(default_factory=list)
    threads_read: int = 0
    threads_never_read: int = 0

    @property
    def unit_ids(self) -> list[str]:
        return self.window_ids


def window_lease() -> timedelta:
    """How long a window's claim lasts: its task's hard time limit."""
    return timedelta(seconds=settings.CORE_EXTRACTION_WINDOW_SECONDS)


def _threads_due(*, switch: ExtractionSwitch, now: datetime):
    """The organisation's threads this switch reads now: quiet for 30 minutes, with
    items it has not read, naming a person unless it reads `all`, written by one of
    `filters.key_ids` and answered by one of `filters.agent_ids` when those are given."""
    threads = Thread.objects.for_organisation(switch.organisation_id).filter(last_item_at__lte=now - QUIET_PERIOD)
    if switch.threads_read == ExtractionSwitch.Threads.WITH_PERSON:
        threads = threads.filter(subject__isnull=False)
    if switch.filter_key_ids:
        threads = threads.filter(key_id__in=switch.filter_key_ids)
    if switch.filter_agent_ids:
        answered = Thread.objects.for_organisation(switch.organisation_id).filter(agents__id__in=switch.filter_agent_ids)
        threads = threads.filter(pk__in=answered.values("pk"))
    read_position = ExtractionCursor.objects.for_organisation(switch.organisation_id).filter(
        switch_id=switch.pk, thread_id=OuterRef("pk")
    )
    return (
        threads.annotate(read_position=Coalesce(Subquery(read_position.values("read_position")[:1]), Value(0)))
        .filter(item_count__gt=F("read_position"))
        .order_by("last_item_at", "id")
    )


def _sessions(items: list[tuple[int, str, datetime]]) -> list[list[tuple[int, str, datetime]]]:
    """Runs of items (position, id, time) each ending in a quiet period. The first
    unread item starts one: the thread was quiet when its earlier items were read."""
    sessions: list[list] = []
    for item in items:
        if sessions and item[2] - sessions[-1][-1][2] < QUIET_PERIOD:
            sessions[-1].append(item)
        else:
            sessions.append([item])
    return sessions


def _session_summary(session: list[tuple[int, str, datetime]]) -> dict:
    return {
        "first_position": session[0][0],
        "last_position": session[-1][0],
        "first_item_id": session[0][1],
        "last_item_id": session[-1][1],
        "from": session[0][2].isoformat(),
        "to": session[-1][2].isoformat(),
    }


def _cut(items: list[tuple[int, str, datetime]], *, limit: int) -> list[tuple[int, int, list[dict]]]:
    """Windows (first position, last position, sessions ending in it) of at most `limit`
    items: whole sessions packed together, a session longer than `limit` read in parts whose
    last holds its end."""
    windows: list[tuple[int, int, list[dict]]] = []
    current: list = []
    ending: list[dict] = []
    for session in _sessions(items):
        if current and len(current) + len(session) > limit:
            windows.append((current[0][0], current[-1][0], ending))
            current, ending = [], []
        parts = [session[start : start + limit] for start in range(0, len(session), limit)]
        for part in parts[:-1]:
            windows.append((part[0][0], part[-1][0], []))
        current.extend(parts[-1])
        ending.append(_session_summary(session))
    if current:
        windows.append((current[0][0], current[-1][0], ending))
    return windows


def _thread_windows(*, switch: ExtractionSwitch, run: ExtractionRun, thread: Thread, clock: datetime) -> list[ExtractionWindow]:
    items = list(
        Item.objects.for_organisation(switch.organisation_id)
        .filter(thread_id=thread.pk, position__gte=thread.read_position, position__lt=thread.item_count)
        .order_by("position")
        .values_list("position", "id", "created_at")
    )
    return [
        ExtractionWindow(
            organisation_id=switch.organisation_id,
            switch=switch,
            run=run,
            thread=thread,
            first_position=first,
            last_position=last,
            sessions=ending,
            queued_at=clock,
        )
        for first, last, ending in _cut(items, limit=settings.CORE_EXTRACTION_WINDOW_ITEMS)
    ]


def _cursor_advance(*, switch: ExtractionSwitch, thread: Thread) -> None:
    ExtractionCursor.objects.update_or_create(switch=switch, thread=thread, defaults={"read_position": thread.item_count})


def _switch_due(*, index_id: str, now: datetime, force: bool) -> ExtractionSwitch | None:
    """The switch of `index_id`, locked, when it is due (or `force`)."""
    switch = (
        ExtractionSwitch.objects.unscoped()
        .select_for_update(of=("self",))
        .select_related("connector", "index", "organisation")
        .filter(index_id=index_id)
        .first()
    )
    if switch is None or (not force and switch.next_run_at is not None and switch.next_run_at > now):
        return None
    return switch


def _windows_planned(*, switch: ExtractionSwitch, run: ExtractionRun, now: datetime, clock: datetime) -> tuple[list[ExtractionWindow], int, int]:
    """New windows of the threads the switch reads now, their cursors moved past them. Returns
    (windows, threads read, threads never read)."""
    windows: list[ExtractionWindow] = []
    threads_read = threads_never_read = 0
    for thread in _threads_due(switch=switch, now=now):
        if thread_read_mode(thread=thread) == ReadMode.NEVER:
            threads_never_read += 1  # a thread in which Core redacted a value before threads were marked
        else:
            threads_read += 1
            windows.extend(_thread_windows(switch=switch, run=run, thread=thread, clock=clock))
        _cursor_advance(switch=switch, thread=thread)
    ExtractionWindow.objects.bulk_create(windows)
    return windows, threads_read, threads_never_read


@transaction.atomic(durable=True)
def extraction_switch_plan(*, index_id: str, now: datetime | None = None, force: bool = False) -> RunPlan | None:
    """Plans one run of the switch of `index_id` when it is due (or `force`): new windows for
    the threads it reads, parked windows again while the organisation is under its monthly
    limit, and windows re-queued or failed for a passing reason. Returns None when the switch
    is not due; a plan without a run when it is not active."""
    # `now` is the clock the run reads by (the command's --now); claims and queues keep real time.
    clock = timezone.now()
    now = now or clock
    switch = _switch_due(index_id=index_id, now=now, force=force)
    if switch is None:
        return None
    state = switch_state(switch=switch, now=now)
    if switch.enabled:
        switch.next_run_at = now + timedelta(minutes=switch.schedule_minutes)
        switch.save(update_fields=["next_run_at"])
    if state != SwitchState.ACTIVE:
        return RunPlan(index_id=index_id, state=state)

    run = ExtractionRun.objects.create(organisation_id=switch.organisation_id, switch=switch, started_at=now)
    windows, threads_read, threads_never_read = _windows_planned(switch=switch, run=run, now=now, clock=clock)
    resumed = work_resumed(
        ExtractionWindow.objects.for_organisation(switch.organisation_id).filter(switch_id=switch.pk),
        run=run,
        clock=clock,
        # Windows re-queued by a change of the switch wait for its next run.
        again=Q(status=ExtractionWindow.Status.QUEUED, run__isnull=True),
        transient=TRANSIENT_FAILURES,
        max_attempts=MAX_ATTEMPTS,
        limit_reached=token_limit_reached(organisation=switch.organisation, at=now),
    )
    window_ids = [window.pk for window in windows] + resumed
    run.planned(window_ids, now=now, windows=len(window_ids))
    logger.info(
        "extraction.run.planned",
        extra={"index": index_id, "run": run.pk, "windows": len(window_ids), "resumed": len(resumed), "threads": threads_read},
    )
    return RunPlan(
        index_id=index_id,
        state=state,
        run_id=run.pk,
        window_ids=window_ids,
        threads_read=threads_read,
        threads_never_read=threads_never_read,
    )


class ExtractionDispatch(Dispatch):
    @property
    def window_ids(self) -> list[str]:
        return self.unit_ids


class ExtractionDispatcher(Dispatcher):
    events = "extraction.windows"
    dispatch_class = ExtractionDispatch

    def lease(self) -> timedelta:
        return window_lease()

    def due(self, now: datetime) -> list[str]:
        return switches_due(now=now)

    def plan(self, *, index_id: str, now: datetime, force: bool) -> RunPlan | None:
        return extraction_switch_plan(index_id=index_id, now=now, force=force)

    def recoverable(self, index_ids: list[str] | None) -> QuerySet:
        """Windows of enabled switches."""
        windows = ExtractionWindow.objects.unscoped().filter(switch__enabled=True)
        return windows if index_ids is None else windows.filter(switch_id__in=index_ids)


DISPATCHER = ExtractionDispatcher()


def extraction_windows_recover(*, index_ids: list[str] | None = None) -> list[str]:
    """Windows of enabled switches (of `index_ids`, or all) to hand out again."""
    return DISPATCHER.recover(index_ids=index_ids)


def extraction_dispatch(*, now: datetime | None = None, index_ids: list[str] | None = None) -> ExtractionDispatch:
    """Plans every due switch — or every switch of `index_ids`, due or not — and recovers
    windows left behind. Each switch is planned in its own transaction."""
    return DISPATCHER.dispatch(now=now, index_ids=index_ids)
