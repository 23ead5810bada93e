"""Per-key rate limits on a shared store.

Each key has a token bucket: it holds up to a burst of requests and refills at its
organisation's `rate_limit_per_minute` (else CORE_RATE_LIMIT_PER_MINUTE), so a backend may send
a burst after a quiet moment and then keeps the sustained rate. The bucket holds
CORE_RATE_LIMIT_BURST requests, or a minute's worth when the rate is lower: a burst never
exceeds what the organisation allows in a minute. An empty bucket answers 429 with
`Retry-After` (the seconds until the next request fits). The buckets live in Redis
(CORE_RATE_LIMIT_URL, else REDIS_URL) and are taken from in one Lua script, so every web process
on every machine takes from the same bucket without a race. A subject token counts against its
key. Without Redis (development) each process keeps its own buckets, under a lock. When Redis
cannot be reached the request passes (logged): a limit is a protection, not a reason to refuse
every caller.
"""
from __future__ import annotations

import logging
import math
import threading
import time
from collections import Counter
from dataclasses import dataclass

import redis
from django.conf import settings
from rest_framework.throttling import BaseThrottle

from core_memory.base.telemetry.metrics import rate_limit_refusals

logger = logging.getLogger(__name__)

WINDOW_SECONDS = 60

# Takes `cost` requests from the bucket KEYS[1] when it holds them. ARGV: capacity, refill per
# second, now (seconds), cost. The bucket is full when new; it is kept until it would be full again.
# Answers whether it was taken and the requests left (as text: Lua's numbers leave Redis as integers).
_TAKE_SCRIPT = """
local capacity = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1])
local at = tonumber(state[2])
if tokens == nil or at == nil then
  tokens = capacity
  at = now
end
if now > at then
  tokens = math.min(capacity, tokens + (now - at) * rate)
  at = now
end
local taken = 0
if tokens >= cost then
  tokens = tokens - cost
  taken = 1
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(at))
redis.call('EXPIRE', KEYS[1], math.ceil((capacity - tokens) / rate) + 60)
return {taken, tostring(tokens)}
"""


@dataclass(frozen=True)
class RateLimitState:
    """One request's place in its bucket: what the rate-limit headers say."""

    limit: int  # requests per minute, sustained
    burst: int  # the most the bucket holds
    remaining: int  # whole requests left in the bucket after this one
    full_in: int  # seconds until the bucket is full again
    wait: float | None  # refused: seconds until the next request fits; else None


class _ProcessCounter:
    """Buckets and fixed windows in this process's memory: the development fallback without Redis."""

    def __init__(self):
        self._counts: Counter = Counter()
        self._buckets: dict[str, tuple[float, float]] = {}
        self._holds: dict[str, float] = {}
        self._lock = threading.Lock()

    def take(self, name: str, *, capacity: float, rate: float, now: float, cost: float = 1) -> tuple[bool, float]:
        with self._lock:
            tokens, at = self._buckets.get(name, (capacity, now))
            if now > at:
                tokens, at = min(capacity, tokens + (now - at) * rate), now
            taken = tokens >= cost
            if taken:
                tokens -= cost
            self._buckets[name] = (tokens, at)
            return taken, tokens

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
        self._take = self._client.register_script(_TAKE_SCRIPT)

    def take(self, name: str, *, capacity: float, rate: float, now: float, cost: float = 1) -> tuple[bool, float]:
        taken, tokens = self._take(keys=[f"{name}:bucket"], args=[capacity, rate, repr(now), cost])
        return bool(taken), float(tokens)

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


def rate_limit_burst(limit: int) -> int:
    """The most requests a bucket of `limit` per minute holds: CORE_RATE_LIMIT_BURST, or the
    minute's `limit` when that is lower."""
    return max(1, min(settings.CORE_RATE_LIMIT_BURST, limit))


def rate_limit_take(*, name: str, limit: int, now: float | None = None) -> RateLimitState | None:
    """Takes one request of `name` from its bucket (`limit` per minute, sustained); its state,
    with `wait` set when the bucket is empty. None when the store cannot be reached."""
    if limit <= 0:
        # No request at all: nothing to take, and no refill to wait for.
        return RateLimitState(limit=0, burst=0, remaining=0, full_in=WINDOW_SECONDS, wait=WINDOW_SECONDS)
    now = _now() if now is None else now
    burst = rate_limit_burst(limit)
    rate = limit / WINDOW_SECONDS
    try:
        taken, tokens = _counter().take(_named(name), capacity=burst, rate=rate, now=now)
    except redis.RedisError as error:
        logger.warning("rate_limit.store_unavailable", extra={"error": type(error).__name__})
        return None
    wait = None if taken else max(1, math.ceil((1 - tokens) / rate))
    return RateLimitState(
        limit=limit, burst=burst, remaining=int(tokens), full_in=math.ceil((burst - tokens) / rate), wait=wait
    )


def rate_limit_hit(*, name: str, limit: int, now: float | None = None) -> float | None:
    """Takes one request of `name` from its bucket; the seconds to wait when it is empty, else None."""
    state = rate_limit_take(name=name, limit=limit, now=now)
    return state.wait if state else None


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


def key_rate_limit_state(caller) -> RateLimitState | None:
    """Takes one request of the caller's key — whichever entrance it came in by: the API, `/mcp`,
    the OpenAI-compatible routes — from its bucket, at its organisation's limit; None for a caller
    without a key or when the store cannot be reached."""
    key = getattr(caller, "key", None)
    if key is None:
        return None
    return _counted(rate_limit_take(name=key.id, limit=key.organisation.key_rate_limit_per_minute()), cause="key")


def anonymous_rate_limit_take(*, address: str) -> RateLimitState | None:
    """Takes one request without a valid credential — none, or a wrong, revoked or expired one —
    from its address's bucket (CORE_RATE_LIMIT_ANONYMOUS_PER_MINUTE), at every entrance: guessing
    keys, and work done for nobody (the API's document), is limited like a key's requests.
    None when the store cannot be reached."""
    return _counted(rate_limit_take(name=f"address:{address}", limit=settings.CORE_RATE_LIMIT_ANONYMOUS_PER_MINUTE), cause="address")


def _counted(state: RateLimitState | None, *, cause: str) -> RateLimitState | None:
    """A refusal is counted by its cause (the key's bucket, the address's, an administrator's)."""
    if state is not None and state.wait is not None:
        rate_limit_refusals.labels(cause=cause).inc()
    return state


def rate_limit_headers(state: RateLimitState) -> dict[str, str]:
    """What an answer tells its caller of its bucket, so a client can pace itself; a refusal adds
    `Retry-After`, the seconds until the next request fits."""
    headers = {
        "X-RateLimit-Limit": str(state.limit),
        "X-RateLimit-Burst": str(state.burst),
        "X-RateLimit-Remaining": str(state.remaining),
        "X-RateLimit-Reset": str(state.full_in),
    }
    if state.wait is not None:
        headers["Retry-After"] = str(max(1, math.ceil(state.wait)))
    return headers


def console_rate_limit_take(user, *, organisation_limit: int | None) -> RateLimitState | None:
    """An administrator's console requests, counted like a key's: each administrator may ask
    what each key of her organisation may (the server's limit without one)."""
    return _counted(rate_limit_take(name=f"console:{user.pk}", limit=organisation_limit or settings.CORE_RATE_LIMIT_PER_MINUTE), cause="console")


class KeyRateThrottle(BaseThrottle):
    """DRF's throttle hook: after authentication, before the view (nothing is written). Every
    DRF view has it by default (REST_FRAMEWORK's DEFAULT_THROTTLE_CLASSES). The bucket's state is
    kept on the request for the answer's headers (CoreApi.finalize_response)."""

    def allow_request(self, request, view) -> bool:
        state = key_rate_limit_state(request.user)
        request.rate_limit_state = state
        self._wait = state.wait if state else None
        return self._wait is None

    def wait(self) -> float | None:
        return self._wait
