"""Per-key rate limits on a shared store.

Each key may make its organisation's `rate_limit_per_minute` requests per minute (else
CORE_RATE_LIMIT_PER_MINUTE); beyond it the answer is a 429 with `Retry-After`. The counts
live in Redis (CORE_RATE_LIMIT_URL, else REDIS_URL), so every web process on every machine
counts against the same limit. A subject token counts against its key. Without Redis
(development) each process counts for itself. When Redis cannot be reached the request
passes (logged): a limit is a protection, not a reason to refuse every caller.
"""
from __future__ import annotations

import logging
import math
import threading
import time
from collections import Counter

import redis
from django.conf import settings
from rest_framework.throttling import BaseThrottle

logger = logging.getLogger(__name__)

WINDOW_SECONDS = 60


class _ProcessCounter:
    """Fixed windows in this process's memory: the development fallback without Redis."""

    def __init__(self):
        self._counts: Counter = Counter()
        self._holds: dict[str, float] = {}
        self._lock = threading.Lock()

    def hold(self, name: str, until: float, seconds: float) -> None:
        with self._lock:
            self._holds[name] = until

    def held_until(self, name: str) -> float:
        with self._lock:
            return self._holds.get(name, 0.0)

    def hit(self, name: str, window: int, *, amount: int = 1, seconds: int = WINDOW_SECONDS) -> int:
        with self._lock:
            for stale in [each for each in self._counts if each[0] == name and each[1] < window]:
                del self._counts[stale]
            self._counts[(name, window)] += amount
            return self._counts[(name, window)]


class _RedisCounter:
    def __init__(self, url: str):
        self._client = redis.Redis.from_url(url, socket_timeout=0.5, socket_connect_timeout=0.5)

    def hit(self, name: str, window: int, *, amount: int = 1, seconds: int = WINDOW_SECONDS) -> int:
        counter = f"{name}:{window}"
        pipeline = self._client.pipeline(transaction=True)
        pipeline.incrby(counter, amount)
        pipeline.expire(counter, seconds * 2)
        count, _ = pipeline.execute()
        return count

    def hold(self, name: str, until: float, seconds: float) -> None:
        # Kept a little longer than the hold; the time it ends is what counts.
        self._client.set(f"{settings.CORE_RATE_LIMIT_PREFIX}:hold:{name}", repr(until), ex=math.ceil(seconds) + 60)

    def held_until(self, name: str) -> float:
        value = self._client.get(f"{settings.CORE_RATE_LIMIT_PREFIX}:hold:{name}")
        return float(value) if value else 0.0


_counters: dict[str, object] = {}


def _named(name: str) -> str:
    # The prefix in both stores: counts under one prefix (a test's own) are never another's.
    return f"{settings.CORE_RATE_LIMIT_PREFIX}:{name}"


def _counter():
    url = settings.CORE_RATE_LIMIT_URL
    if url not in _counters:
        _counters[url] = _RedisCounter(url) if url else _ProcessCounter()
    return _counters[url]


def rate_limit_hit(*, name: str, limit: int, now: float | None = None) -> float | None:
    """Counts one request of `name` in the current minute; the seconds to wait when it is
    over `limit`, else None."""
    now = _now() if now is None else now
    window = int(now // WINDOW_SECONDS)
    try:
        count = _counter().hit(_named(name), window)
    except redis.RedisError as error:
        logger.warning("rate_limit.store_unavailable", extra={"error": type(error).__name__})
        return None
    if count <= limit:
        return None
    return max(1, math.ceil((window + 1) * WINDOW_SECONDS - now))


def attempts_count(*, name: str, seconds: int, add: bool, now: float | None = None) -> tuple[int, int]:
    """Attempts of `name` in the current window of `seconds` (counting this one when `add`),
    and the seconds until the window ends. (0, …) when the store cannot be reached."""
    now = _now() if now is None else now
    window = int(now // seconds)
    try:
        count = _counter().hit(_named(name), window, amount=1 if add else 0, seconds=seconds)
    except redis.RedisError as error:
        logger.warning("rate_limit.store_unavailable", extra={"error": type(error).__name__})
        count = 0
    return count, max(1, math.ceil((window + 1) * seconds - now))


def _now() -> float:
    return time.time()


def hold_set(*, name: str, seconds: float) -> None:
    """Holds `name` for `seconds` from now (shared by every process, like the counts)."""
    try:
        _counter().hold(name, _now() + seconds, seconds)
    except redis.RedisError as error:
        logger.warning("rate_limit.store_unavailable", extra={"error": type(error).__name__})


def held_for(*, name: str) -> float:
    """The seconds `name` is still held; 0 when it is not (or the store cannot be reached)."""
    try:
        until = _counter().held_until(name)
    except redis.RedisError as error:
        logger.warning("rate_limit.store_unavailable", extra={"error": type(error).__name__})
        return 0.0
    return max(0.0, until - _now())


def key_rate_limit_wait(principal) -> float | None:
    """Counts one request of the caller's key — whichever entrance it came in by: the API, `/mcp`,
    the OpenAI-compatible routes — against its organisation's limit; the seconds to wait when
    it is over, else None."""
    key = getattr(principal, "key", None)
    if key is None:
        return None
    return rate_limit_hit(name=key.id, limit=principal.organisation.key_rate_limit_per_minute())


def console_rate_limit_wait(user, *, organisation_limit: int | None) -> float | None:
    """An administrator's console requests, counted like a key's: each administrator may ask
    what each key of her organisation may (the server's limit without one)."""
    return rate_limit_hit(name=f"console:{user.pk}", limit=organisation_limit or settings.CORE_RATE_LIMIT_PER_MINUTE)


class KeyRateThrottle(BaseThrottle):
    """DRF's throttle hook: after authentication, before the view (nothing is written). Every
    DRF view has it by default (REST_FRAMEWORK's DEFAULT_THROTTLE_CLASSES)."""

    def allow_request(self, request, view) -> bool:
        self._wait = key_rate_limit_wait(request.user)
        return self._wait is None

    def wait(self) -> float | None:
        return self._wait
