"""The management command that runs a kind of durable work at once, in the foreground: what
beat and the workers run, as if the clock read `--now`, with a JSON summary per owner.

A kind's summary may carry an `error` (e.g. no usable model is configured): the summary is
still printed, and the command then fails with that one line on stderr and exit status 1.
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from typing import ClassVar

from django.core.management.base import BaseCommand, CommandError

from core_memory.base.commands import now_option
from core_memory.base.work.dispatch import Dispatch


class WorkCommand(BaseCommand):
    """A kind subclasses it with `existing`, `dispatch`, `run_unit`, `plan_summary` and
    `outcomes_summarise`."""

    # What `--store` runs, for its help ("this store's switch"), and the summary's list of owners.
    store_help: ClassVar[str]
    owners: ClassVar[str]
    # The error for `--store` ids that name nothing to run, formatted with them.
    missing: ClassVar[str]

    def add_arguments(self, parser):
        parser.add_argument("--store", action="append", dest="stores", metavar="INDEX_ID", help=self.store_help)
        parser.add_argument("--now", type=str, help="The moment to run as, ISO 8601 with an offset (default: now).")

    def existing(self, index_ids: list[str]) -> Iterable[str]:
        raise NotImplementedError

    def dispatch(self, *, now: datetime, index_ids: list[str] | None) -> Dispatch:
        raise NotImplementedError

    def run_unit(self, *, unit_id: str, now: datetime):
        raise NotImplementedError

    def plan_summary(self, plan, index_id: str) -> dict:
        """An owner's entry: what its plan did (`plan` None: a recovered unit's owner, not due)."""
        raise NotImplementedError

    def outcomes_summarise(self, entry: dict, outcomes: list) -> None:
        """Adds to an owner's entry what its units did this time."""
        raise NotImplementedError

    def handle(self, *args, stores=None, now=None, **options):
        now = now_option(now)
        if stores:
            missing = sorted(set(stores) - set(self.existing(stores)))
            if missing:
                raise CommandError(self.missing.format(", ".join(missing)))
        dispatch = self.dispatch(now=now, index_ids=stores)
        outcomes = [self.run_unit(unit_id=unit_id, now=now) for unit_id in dispatch.unit_ids]
        summary = self.summary(now=now, dispatch=dispatch, outcomes=outcomes)
        self.stdout.write(json.dumps(summary))
        if summary.get("error"):
            raise CommandError(summary["error"])

    def summary(self, *, now: datetime, dispatch: Dispatch, outcomes: list) -> dict:
        owners = {plan.index_id: self.plan_summary(plan, plan.index_id) for plan in dispatch.plans}
        grouped: dict[str, list] = {}
        for outcome in outcomes:
            grouped.setdefault(outcome.index_id, []).append(outcome)
        for index_id in grouped:
            owners.setdefault(index_id, self.plan_summary(None, index_id))
        for index_id, entry in owners.items():
            self.outcomes_summarise(entry, grouped.get(index_id, []))
        return {"now": now.isoformat(), self.owners: [owners[index_id] for index_id in sorted(owners)], "recovered": len(dispatch.recovered)}
