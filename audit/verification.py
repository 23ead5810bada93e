"""When every audit chain was last verified, and whether all were intact: what an operator's
metrics show (`/metrics`), kept in Redis (`REDIS_URL`) so a verification run by any process is
seen by every web process; without Redis, in this process only."""
from __future__ import annotations

import json
import time

import redis
from django.conf import settings

KEY = "core:audit:last_verification"
_in_process: dict[str, float | bool] = {}


def _client():
    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=0.5, socket_connect_timeout=0.5) if settings.REDIS_URL else None


def audit_verification_record(*, intact: bool, at: float | None = None) -> None:
    """Every chain was just verified (`manage.py audit_verify` without `--org`)."""
    value = {"at": at if at is not None else time.time(), "intact": intact}
    client = _client()
    if client is None:
        _in_process.update(value)
        return
    with client:
        client.set(KEY, json.dumps(value))


def audit_verification_last() -> tuple[float | None, bool | None]:
    """(When, as a Unix time, whether intact) of the last verification of every chain, or (None, None)."""
    client = _client()
    if client is None:
        return _in_process.get("at"), _in_process.get("intact")
    with client:
        stored = client.get(KEY)
    if stored is None:
        return None, None
    value = json.loads(stored)
    return value["at"], value["intact"]
