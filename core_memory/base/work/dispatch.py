"""Handing out durable work: planning what is due, and recovering what was left behind.

Beat's dispatcher and the foreground command both come here. Each owner (a switch, a store)
is planned in its own transaction, under a row lock that keeps two dispatchers from planning
it twice; then the units whose claim ran out (their worker died or was killed) go back to
`queued`, and those queued longer than a claim lasts (their message was lost with a broker)
are sent again. A second delivery of a unit is harmless: only one worker can claim it.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, ClassVar

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from core_memory.base.work.claims import work_to_hand_out_again

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Dispatch:
    """What one dispatch handed out: the plans it made (each with `unit_ids`) and the units it
    recovered."""

    plans: list[Any]
    recovered: list[str]

    @property
    def unit_ids(self) -> list[str]:
        return [unit_id for plan in self.plans for unit_id in plan.unit_ids] + self.recovered


class Dispatcher:
    """Plans and recovers one kind of work. A kind subclasses it with `due`, `plan`,
    `recoverable` and `lease`."""

    # The logger's event prefix ("extraction.windows").
    events: ClassVar[str]
    dispatch_class: ClassVar[type[Dispatch]] = Dispatch

    def lease(self) -> timedelta:
        raise NotImplementedError

    def due(self, now: datetime) -> list[str]:
        """The owners due at `now`."""
        raise NotImplementedError

    def plan(self, *, index_id: str, now: datetime, force: bool):
        """Plans one owner in its own transaction: a plan with `unit_ids`, or None when it is not due."""
        raise NotImplementedError

    def recoverable(self, index_ids: list[str] | None) -> QuerySet:
        """The units whose owner is on (of `index_ids`, or all)."""
        raise NotImplementedError

    def recover(self, *, index_ids: list[str] | None = None) -> list[str]:
        """Units to hand out again (the module's docstring)."""
        with transaction.atomic(durable=True):
            unit_ids = work_to_hand_out_again(self.recoverable(index_ids), clock=timezone.now(), lease=self.lease())
        if unit_ids:
            logger.warning(f"{self.events}.recovered", extra={"units": len(unit_ids)})
        return unit_ids

    def dispatch(self, *, now: datetime | None = None, index_ids: list[str] | None = None) -> Dispatch:
        """Plans every due owner — or every one of `index_ids`, due or not — and recovers units
        left behind."""
        now = now or timezone.now()
        candidates = self.due(now) if index_ids is None else index_ids
        plans = [self.plan(index_id=index_id, now=now, force=index_ids is not None) for index_id in candidates]
        return self.dispatch_class(plans=[plan for plan in plans if plan is not None], recovered=self.recover(index_ids=index_ids))
