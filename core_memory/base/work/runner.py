"""One attempt at one unit of durable work, the same for every kind.

1. Claim: a conditional UPDATE moves the unit to `running` with a fresh token and a lease, if
   it is queued or its last claim ran out. Whoever does not win leaves it alone. A unit whose
   owner is not on (a switch turned off, maintenance off) is not claimed: it waits, queued.
2. Prepare: the kind checks what would make asking pointless or forbidden before paying for
   it, and says what it will ask (or that nothing is left to ask). A unit claimed more often
   than its kind allows fails without asking.
3. Ask the model — outside any transaction — unless the organisation reached its monthly token
   limit (the unit is then `parked`); a bad answer fails the unit before anything is written.
4. Write: in one transaction that first locks the unit by its token, the kind writes its
   answer and the unit ends with its kind's done status and counts. A worker killed before
   this commits wrote nothing; one whose claim ran out finds its token gone and writes nothing
   (another worker has the unit).

Every end — written, failed, parked, cancelled — is saved with the tokens the attempt spent and
counted into the unit's run in the same transaction.
"""
from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, ClassVar

from django.db import transaction
from django.utils import timezone

from core_memory.base.errors import ApplicationError
from core_memory.base.telemetry.metrics import work_units_run
from core_memory.base.telemetry.tracing import span, span_set
from core_memory.base.work.claims import CANCELLED, FAILED, PARKED, QUEUED, RUNNING, run_counted, work_claim, work_locked

logger = logging.getLogger(__name__)

__all__ = ["CANCELLED", "FAILED", "PARKED", "End", "WorkFailed", "WorkRunner", "WorkStopped"]


class WorkFailed(Exception):
    """The unit fails with `code` and writes nothing (`invalid_model_output`, `model_error`, …).
    `usage` is what the model call cost, if one was made: it is counted all the same."""

    def __init__(self, code: str, message: str, *, usage=None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.usage = usage


class WorkStopped(Exception):
    """The unit ends without asking and without failing: `parked` or `cancelled`."""

    def __init__(self, status: str, code: str = ""):
        super().__init__(code or status)
        self.status = status
        self.code = code


@dataclass(frozen=True)
class End:
    """How an attempt ended a unit: its status, the error, the tokens and model calls it spent
    (`usage` has `input_tokens` and `output_tokens`), and what the write counted."""

    status: str
    code: str = ""
    message: str = ""
    usage: Any = None
    calls: int = 0
    counts: Mapping[str, int] = field(default_factory=dict)


class WorkRunner:
    """Runs one unit of a kind of work. A kind subclasses it with its models and its steps:
    `owner`, `prepare`, `asks`, `limit_reached`, `ask`, `write` and `outcome`."""

    unit_model: ClassVar[type]
    run_model: ClassVar[type]
    # The unit's name in messages and logs ("window"), and the logger's event prefix.
    noun: ClassVar[str]
    events: ClassVar[str]
    # The status of a unit whose answer was written.
    done_status: ClassVar[str]
    max_attempts: ClassVar[int] = 3
    # What `run` reads with the unit (`select_related`).
    related: ClassVar[tuple[str, ...]] = ()
    # The error code a parked unit keeps.
    parked_code: ClassVar[str] = ""
    # The codes a service's refusal while writing fails the unit with, most specific first.
    write_failures: ClassVar[tuple[tuple[type[ApplicationError], str], ...]] = ()
    # Failures of the model call itself: the call is counted; other failures count none.
    model_failure_codes: ClassVar[tuple[str, ...]] = ("invalid_model_output", "model_error")
    # The unit's own counters of what it wrote, set from the write's counts.
    counted_fields: ClassVar[tuple[str, ...]] = ("written",)

    def lease(self) -> timedelta:
        raise NotImplementedError

    # The kind's steps.

    def owner(self, unit, now: datetime):
        """What the unit's steps need of its owner (its switch, its store's analyses), or None
        while the owner is off: the unit then waits, queued, and is not claimed."""
        raise NotImplementedError

    def prepare(self, unit, owner, now: datetime):
        """What the unit will ask; raises `WorkFailed` or `WorkStopped` to end it unasked."""
        raise NotImplementedError

    def asks(self, prepared) -> bool:
        """False: nothing is left to ask; the unit ends done without a call or a write."""
        raise NotImplementedError

    def limit_reached(self, unit, owner, now: datetime) -> bool:
        raise NotImplementedError

    def ask(self, unit, owner, prepared, now: datetime) -> tuple[Any, Any]:
        """The model's answer, read whole, and its usage; raises `WorkFailed`."""
        raise NotImplementedError

    def write(self, unit, prepared, answer, now: datetime) -> Mapping[str, int]:
        """Inside the unit's transaction: writes the answer; answers its counts."""
        raise NotImplementedError

    def outcome(self, unit_id: str, unit, end: End | None):
        """What the caller learns of the attempt; `end` None: this attempt did not run the unit."""
        raise NotImplementedError

    def run_counts(self, unit, end: End) -> Mapping[str, int]:
        """The run's counters that rise with this end, besides `errors` and `parked`."""
        return end.counts

    def counted(self, unit, end: End) -> None:
        """Sets the unit's own counters of the end (saved by the runner)."""
        for name in self.counted_fields:
            setattr(unit, name, end.counts.get(name, 0))

    # The framework.

    def run(self, *, unit_id: str, now: datetime | None = None):
        """Runs the unit if it is there to be run (the module's docstring). Safe to call for any
        unit any number of times, from any number of workers: only a claim runs it. In a span of
        its own (`<events>.run`), counted by kind and outcome when it ran."""
        with span(f"{self.events}.run", **{f"core.{self.noun}": unit_id}):
            return self._run(unit_id=unit_id, now=now)

    def _run(self, *, unit_id: str, now: datetime | None):
        # `now` is the clock the work is for (the command's --now); claims and leases keep real time.
        clock = timezone.now()
        now = now or clock
        unit = self.unit_model.objects.unscoped().select_related(*self.related).filter(pk=unit_id).first()
        if unit is None or unit.status not in (QUEUED, RUNNING):
            return self.outcome(unit_id, unit, None)
        owner = self.owner(unit, now)
        if owner is None:
            return self.outcome(unit_id, unit, None)
        token = work_claim(self.unit_model.objects.unscoped(), pk=unit_id, clock=clock, lease=self.lease())
        if token is None:
            return self.outcome(unit_id, unit, None)
        unit.refresh_from_db(fields=["attempts", "run"])
        end = self._attempt(unit, owner, token=token, now=now)
        if end is None:
            logger.warning(f"{self.events}.claim_lost", extra={self.noun: unit_id})
            return self.outcome(unit_id, unit, None)
        work_units_run.labels(kind=self.noun, outcome=end.status).inc()
        span_set(**{"core.organisation": getattr(unit, "organisation_id", None), "core.outcome": end.status})
        log = logger.warning if end.status == FAILED else logger.info
        log(f"{self.events}.{end.status}", extra={self.noun: unit_id, "code": end.code, **end.counts})
        return self.outcome(unit_id, unit, end)

    def _attempt(self, unit, owner, *, token: uuid.UUID, now: datetime) -> End | None:
        """The attempt's end, saved; None when the claim was lost before it could be saved."""
        calls = 0
        try:
            if unit.attempts > self.max_attempts:
                raise WorkFailed("attempts_exhausted", f"The {self.noun} was claimed {self.max_attempts} times without finishing.")
            prepared = self.prepare(unit, owner, now)
            if not self.asks(prepared):
                return self._written(unit, token=token, end=End(status=self.done_status), write=None, now=now)
            if self.limit_reached(unit, owner, now):
                raise WorkStopped(PARKED, self.parked_code)
            calls = 1
            answer, usage = self.ask(unit, owner, prepared, now)
            end = End(status=self.done_status, usage=usage, calls=calls)
            return self._written(unit, token=token, end=end, write=lambda locked: self.write(locked, prepared, answer, now), now=now)
        except WorkStopped as stop:
            end = End(status=stop.status, code=stop.code)
        except WorkFailed as failure:
            calls = calls if failure.code in self.model_failure_codes else 0
            end = End(status=FAILED, code=failure.code, message=failure.message, usage=failure.usage, calls=calls)
        return end if self._closed(unit, token=token, end=end, now=now) else None

    def _written(self, unit, *, token: uuid.UUID, end: End, write, now: datetime) -> End | None:
        """The answer's writes and the unit's done status, in one transaction; None, with
        nothing written, when the unit is no longer this attempt's."""
        try:
            with transaction.atomic(durable=True):
                locked = work_locked(self.unit_model.objects.for_organisation(unit.organisation_id), pk=unit.pk, token=token)
                if locked is None:
                    return None
                if write is not None:
                    end = replace(end, counts=dict(write(locked)))
                self._finish(locked, end, now=now)
                return end
        except ApplicationError as error:
            code = next((code for kind, code in self.write_failures if isinstance(error, kind)), None)
            if code is None:
                raise
            # A service refused what the answer asked of it: nothing of it was written.
            raise WorkFailed(code, error.message, usage=end.usage) from error

    def _closed(self, unit, *, token: uuid.UUID, end: End, now: datetime) -> bool:
        """A unit that ends without writing; False when it is no longer this attempt's."""
        with transaction.atomic(durable=True):
            locked = work_locked(self.unit_model.objects.for_organisation(unit.organisation_id), pk=unit.pk, token=token)
            if locked is None:
                return False
            self._finish(locked, end, now=now)
            return True

    def _finish(self, unit, end: End, *, now: datetime) -> None:
        """The locked unit's end, counted into its run."""
        unit.status = end.status
        unit.error_code = end.code
        unit.error_message = end.message[:500]
        self.counted(unit, end)
        if end.usage is not None:
            unit.input_tokens += end.usage.input_tokens
            unit.output_tokens += end.usage.output_tokens
        unit.claim_token = unit.lease_until = None
        unit.finished_at = timezone.now()
        unit.save()
        runs = self.run_model.objects.for_organisation(unit.organisation_id)
        counts = {"errors": int(end.status == FAILED), "parked": int(end.status == PARKED), **self.run_counts(unit, end)}
        run_counted(runs, run_id=unit.run_id, now=now, **counts)
