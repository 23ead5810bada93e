"""The management command that runs a kind of durable work at once, in the foreground: what
beat and the workers run, as if the clock read `--now`, with a JSON summary per owner.

When an owner's work could not be done (no usable model, a stopped switch, units that failed),
the kind says why (`owner_problem`) and the summary carries an `error` naming each such owner:
the summary is still printed, and the command then fails with that one line on stderr and exit
status 1, so a script or an operator does not read a run that did nothing as a success.
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
    # How the summary's error begins ("Extraction could not do its work").
    failure: ClassVar[str]

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

    def owner_problem(self, entry: dict) -> str | None:
        """Why an owner's work was not done, read from its entry in the summary; None when it was."""
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
        entries = [owners[index_id] for index_id in sorted(owners)]
        summary = {"now": now.isoformat(), self.owners: entries, "recovered": len(dispatch.recovered)}
        problems = [f"{entry['index_id']}: {problem}" for entry in entries if (problem := self.owner_problem(entry))]
        if problems:
            summary["error"] = f"{self.failure}: {'; '.join(problems)}."
        return summary


def failures_told(count: int, noun: str, errors: dict[str, int]) -> str:
    """ "2 windows failed (model_error: 2)": an owner's failed units, by error code."""
    codes = ", ".join(f"{code}: {number}" for code, number in errors.items())
    return f"{count} {noun}{'' if count == 1 else 's'} failed" + (f" ({codes})" if codes else "")
