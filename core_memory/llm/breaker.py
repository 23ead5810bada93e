"""A circuit breaker per model served elsewhere, per process.

A model that failed `CORE_MODEL_BREAKER_FAILURES` calls in a row is *open*: it is not called for
`CORE_MODEL_BREAKER_SECONDS`, so a search does not wait a timeout for a server known to be down,
and a worker does not queue thousands of calls at it. After that time one call is let through
(*half open*): if it answers, the breaker closes; if not, it stays open for another while.

Per process, as breakers usually are (each web process and worker finds out for itself within a
few calls); the state is in memory and starts closed.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from django.conf import settings

from core_memory.llm.protocol import ProviderError

logger = logging.getLogger(__name__)
T = TypeVar("T")

CLOSED = "closed"
OPEN = "open"
HALF_OPEN = "half_open"


class CircuitBreaker:
    def __init__(self, *, failures: int, seconds: float, clock: Callable[[], float] = time.monotonic):
        self.failures = failures
        self.seconds = seconds
        self.clock = clock
        self._failed = 0
        self._opened_at: float | None = None
        self._trial = False
        self._lock = threading.Lock()

    @property
    def state(self) -> str:
        with self._lock:
            return self._state()

    def _state(self) -> str:
        if self._opened_at is None:
            return CLOSED
        return HALF_OPEN if self.clock() - self._opened_at >= self.seconds else OPEN

    def allow(self) -> bool:
        """Whether a call may be made now: always when closed; when half open, one trial call at a time."""
        with self._lock:
            state = self._state()
            if state == CLOSED:
                return True
            if state == HALF_OPEN and not self._trial:
                self._trial = True
                return True
            return False

    def seconds_open(self) -> float:
        """How long until a trial call is let through (0 when one may be made now)."""
        with self._lock:
            if self._opened_at is None:
                return 0.0
            return max(0.0, self.seconds - (self.clock() - self._opened_at))

    def succeeded(self) -> None:
        with self._lock:
            self._failed, self._opened_at, self._trial = 0, None, False

    def failed(self) -> None:
        with self._lock:
            self._failed += 1
            if self._trial or self._failed >= self.failures:
                self._opened_at = self.clock()
            self._trial = False


_breakers: dict[tuple[str, str], CircuitBreaker] = {}
_breakers_lock = threading.Lock()


def breaker_for(*, kind: str, model_id: str) -> CircuitBreaker:
    """The process's breaker of one model (`kind` is `embedding` or `rerank`: ids may repeat across kinds)."""
    with _breakers_lock:
        breaker = _breakers.get((kind, model_id))
        if breaker is None:
            breaker = CircuitBreaker(failures=settings.CORE_MODEL_BREAKER_FAILURES, seconds=settings.CORE_MODEL_BREAKER_SECONDS)
            _breakers[(kind, model_id)] = breaker
        return breaker


def breakers_reset() -> None:
    """Every breaker closed again (a test's fresh start; settings changed)."""
    with _breakers_lock:
        _breakers.clear()


def breaker_guarded(*, kind: str, model_id: str, call: Callable[[], T]) -> T:
    """`call()` through the model's breaker: refused at once (`model_unavailable`) while it is
    open; a ProviderError it raises counts as a failure and is logged as `llm.<kind>.failed`."""
    breaker = breaker_for(kind=kind, model_id=model_id)
    if not breaker.allow():
        raise ProviderError(
            "model_unavailable",
            f"The model {model_id!r} failed {breaker.failures} calls in a row; it is tried again in {breaker.seconds_open():.0f} s.",
        )
    try:
        answer = call()
    except ProviderError as error:
        breaker.failed()
        logger.warning(f"llm.{kind}.failed", extra={"model": model_id, "code": error.code, "reason": error.message})
        raise
    breaker.succeeded()
    return answer

