"""Watching PostgreSQL's lock queue, for tests where one transaction must wait for another."""
from __future__ import annotations

import time

from django.db import connection


def sessions_waiting_on_a_lock() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")
        return cursor.fetchone()[0]


def sessions_blocked_within(seconds: float) -> int:
    """How many sessions wait on a lock, once one does (or `seconds` have passed)."""
    deadline = time.monotonic() + seconds
    while sessions_waiting_on_a_lock() == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    return sessions_waiting_on_a_lock()
