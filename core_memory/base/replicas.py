"""Reads on PostgreSQL streaming replicas, with read-your-writes (docs/decisions.md "Replicas").

With `DATABASE_REPLICA_URLS` set, searches, memory blocks and list pages read from a streaming
replica; everything else — every write, every read inside a write's transaction, every read
not named here — stays on the primary. Nothing changes when no replica is configured.

Read-your-writes. After a request that wrote commits, the primary's WAL insert position is
remembered in Redis for its organisation's person and for its key (`position_remember`, kept
only ever rising). A read for that person or key uses a replica only once the replica has
replayed past both positions (`pg_last_wal_replay_lsn`), else it reads from the primary: a
person's reads right after her write see it, on every web process.

Health. Each process checks each replica at most every `DATABASE_REPLICA_CHECK_SECONDS`: one
that cannot be reached, is no longer in recovery, or lags the primary by more than
`DATABASE_REPLICA_MAX_LAG_SECONDS` is skipped until a later check finds it well. A read that
fails on a replica (the server went away under it, a query cancelled by recovery) marks the
replica down and is run again on the primary, so a replica stopped under load costs no error.
"""
from __future__ import annotations

import logging
import random
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TypeVar

import redis
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections

from core_memory.base.redis_clients import redis_client

logger = logging.getLogger(__name__)

T = TypeVar("T")

# Remembered positions outlive any lag a replica may have and still be used.
POSITION_TTL_SECONDS = 300
# Sets the key to the position given unless it already holds a later one (positions are
# fixed-width hexadecimal, so text order is position order); refreshes its time to live.
_RAISE_SCRIPT = """
for index, key in ipairs(KEYS) do
  local held = redis.call('GET', key)
  if not held or held < ARGV[1] then
    redis.call('SET', key, ARGV[1], 'EX', ARGV[2])
  else
    redis.call('EXPIRE', key, ARGV[2])
  end
end
return 1
"""
_WRITE = re.compile(r"^\s*(?:INSERT|UPDATE|DELETE|MERGE)\b|^\s*WITH\b.*\b(?:INSERT|UPDATE|DELETE)\b", re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True)
class Reader:
    """Whose writes a read must see: an organisation's person (None: nobody in particular) and
    the key that asks (None: the console)."""

    organisation_id: str
    person: str | None = None
    key_id: str | None = None

    def _person_key(self) -> str:
        return f"{settings.CORE_REPLICA_POSITION_PREFIX}:{self.organisation_id}:person:{self.person}"

    def _key_key(self) -> str:
        return f"{settings.CORE_REPLICA_POSITION_PREFIX}:{self.organisation_id}:key:{self.key_id}"

    def written_under(self) -> list[str]:
        """Where a write is remembered: under its person; a write for nobody in particular
        (a shared record, a key's settings) under its key. A backend that writes for many
        persons with one key thus holds back only the reads of the person written for."""
        if self.person is not None:
            return [self._person_key()]
        return [self._key_key()] if self.key_id is not None else []

    def read_after(self) -> list[str]:
        """What a read must have seen: its person's writes and its key's writes for nobody."""
        return ([self._person_key()] if self.person is not None else []) + ([self._key_key()] if self.key_id is not None else [])


def replicas_configured() -> bool:
    return bool(settings.CORE_REPLICA_DATABASES)


# --- Routing ---------------------------------------------------------------------------------

_reading_on: ContextVar[str | None] = ContextVar("core_replica_reading_on", default=None)


class ReplicaRouter:
    """Django's database router: a read goes to the replica `replica_read` chose for it, unless
    the primary's connection is inside a transaction (a write's reads see what it wrote and lock
    on the primary); everything else goes to the primary. An object read from a replica is
    written, and its relations read later, on the primary."""

    def db_for_read(self, model, **hints) -> str:
        alias = _reading_on.get()
        if alias is None or connections[DEFAULT_DB_ALIAS].in_atomic_block:
            return DEFAULT_DB_ALIAS
        return alias

    def db_for_write(self, model, **hints) -> str:
        return DEFAULT_DB_ALIAS

    def allow_relation(self, first, second, **hints) -> bool:
        return True

    def allow_migrate(self, database: str, app_label: str, **hints) -> bool:
        return database == DEFAULT_DB_ALIAS


def replica_read(reader: Reader, read: Callable[[], T], *, after_own_writes: bool = False) -> T:
    """`read()` on a replica that has replayed every write remembered for `reader`, else on
    the primary; run again on the primary when it fails on the replica. `read` must read
    everything it answers before it returns (no lazy querysets), and write nothing.

    A request that has written already reads on the primary, unless `after_own_writes`: its
    caller knows the read does not read what the request wrote (a turn's memory block reads
    records, the turn's opening wrote its thread)."""
    log = _write_log.get()
    if not replicas_configured() or connections[DEFAULT_DB_ALIAS].in_atomic_block or _reading_on.get() is not None:
        return read()
    if log is not None and log.wrote and not after_own_writes:
        return read()
    alias = _replica_for(reader)
    if alias is None:
        return read()
    token = _reading_on.set(alias)
    try:
        return read()
    except DatabaseError as error:
        _health.failed(alias, error)
    finally:
        _reading_on.reset(token)
    return read()


def _replica_for(reader: Reader) -> str | None:
    needed = _position_needed(reader)
    if needed is None:
        return None
    aliases = list(settings.CORE_REPLICA_DATABASES)
    random.shuffle(aliases)
    for alias in aliases:
        state = _health.state(alias)
        if state.usable and state.replayed < needed:
            state = _health.state(alias, fresh=True)
        if state.usable and state.replayed >= needed:
            return alias
    return None


# --- Positions (read-your-writes) ---------------------------------------------------------------

def _positions() -> redis.Redis:
    return redis_client(settings.CORE_REPLICA_POSITIONS_URL)


def _position_text(position: int) -> str:
    return f"{position:016x}"


def _position_needed(reader: Reader) -> int | None:
    """The latest position a read for `reader` must see (0: none remembered); None when it
    cannot be known (Redis unreachable): then only the primary is sure to answer it."""
    keys = reader.read_after()
    if not keys:
        return 0
    try:
        held = _positions().mget(keys)
    except redis.RedisError as error:
        logger.warning("replicas.positions.unavailable", extra={"error": str(error)})
        return None
    return max((int(value, 16) for value in held if value), default=0)


def position_remember(reader: Reader) -> None:
    """Remember the primary's WAL insert position (after a write committed) for `reader`'s person
    and key. A failure is logged: Redis being away already sends reads to the primary."""
    keys = reader.written_under()
    if not keys:
        return
    try:
        with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
            cursor.execute("SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint")
            position = cursor.fetchone()[0]
    except DatabaseError as error:
        # The write committed; its answer stands. A replica that is behind may miss it for as
        # long as the primary cannot be asked, which also holds back every other request.
        logger.warning("replicas.position.unknown", extra={"error": str(error)})
        return
    try:
        _positions().eval(_RAISE_SCRIPT, len(keys), *keys, _position_text(position), POSITION_TTL_SECONDS)
    except redis.RedisError as error:
        logger.warning("replicas.positions.unavailable", extra={"error": str(error)})


# --- Which requests wrote --------------------------------------------------------------------


@dataclass
class _WriteLog:
    reader: Reader | None = None
    wrote: bool = False


_write_log: ContextVar[_WriteLog | None] = ContextVar("core_replica_write_log", default=None)


def _watch(execute, sql, params, many, context):
    log = _write_log.get()
    if log is not None and not log.wrote and isinstance(sql, str) and _WRITE.match(sql):
        log.wrote = True
    return execute(sql, params, many, context)


def _watched() -> _WriteLog:
    """A new log of this context's writes on the primary, its connection watched."""
    wrappers = connections[DEFAULT_DB_ALIAS].execute_wrappers
    if _watch not in wrappers:
        wrappers.insert(0, _watch)
    log = _WriteLog()
    _write_log.set(log)
    return log


def reader_set(reader: Reader) -> None:
    """Name whose writes the current request makes (its caller, once authenticated)."""
    log = _write_log.get()
    if log is not None:
        log.reader = reader


def _log_close(log: _WriteLog) -> None:
    if log.wrote and log.reader is not None:
        position_remember(log.reader)


@contextmanager
def writes_remembered(reader: Reader) -> Iterator[None]:
    """Outside an HTTP request (the MCP server's tool calls): remember the position after the
    body wrote, as `ReplicaWritesMiddleware` does for a request."""
    if not replicas_configured():
        yield
        return
    outer = _write_log.get()
    log = _watched()
    log.reader = reader
    try:
        yield
    finally:
        _write_log.set(outer)
        _log_close(log)


class ReplicaWritesMiddleware:
    """Remembers the primary's position after a request that wrote, for the person and key it
    was made by (the view names them with `reader_set`); a streamed answer's writes are
    remembered when its stream ends. Installed only when replicas are configured."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        log = _watched()
        response = self.get_response(request)
        if getattr(response, "streaming", False):
            response.streaming_content = _closed_after(response.streaming_content, log)
        else:
            _log_close(log)
        return response


def _closed_after(content, log: _WriteLog):
    try:
        yield from content
    finally:
        _log_close(log)


# --- Health -----------------------------------------------------------------------------------


@dataclass
class ReplicaState:
    usable: bool = False
    replayed: int = 0
    lag_seconds: float | None = None
    checked_at: float = field(default=float("-inf"))


class _Health:
    """Each replica's state as last checked by this process (shared by its threads)."""

    def __init__(self):
        self._states: dict[str, ReplicaState] = {}
        self._lock = threading.Lock()

    def state(self, alias: str, *, fresh: bool = False) -> ReplicaState:
        state = self._states.get(alias)
        interval = settings.CORE_REPLICA_CHECK_SECONDS
        if state is not None and not fresh and clock() - state.checked_at < interval:
            return state
        if state is not None and not state.usable and clock() - state.checked_at < interval:
            return state  # down: not asked again before its time
        state = _check(alias)
        with self._lock:
            self._states[alias] = state
        return state

    def failed(self, alias: str, error: Exception) -> None:
        logger.warning("replicas.read.failed", extra={"replica": alias, "error": str(error)})
        with self._lock:
            self._states[alias] = ReplicaState(usable=False, checked_at=clock())
        _connection_drop(alias)

    def forget(self) -> None:
        with self._lock:
            self._states.clear()


_health = _Health()


def clock() -> float:
    return time.monotonic()


def replica_states() -> dict[str, ReplicaState]:
    """Every configured replica's state as a read would find it now (checked if due)."""
    return {alias: _health.state(alias) for alias in settings.CORE_REPLICA_DATABASES}


def _check(alias: str) -> ReplicaState:
    """The replica's replayed position and lag behind the primary: none lag when it has
    replayed what the primary had written just before; else the time since the last
    transaction it replayed."""
    try:
        with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
            cursor.execute("SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint")
            primary = cursor.fetchone()[0]
        with connections[alias].cursor() as cursor:
            cursor.execute(
                "SELECT pg_is_in_recovery(), (pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::bigint,"
                " extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp())::float8"
            )
            recovering, replayed, since_replay = cursor.fetchone()
    except DatabaseError as error:
        logger.warning("replicas.check.failed", extra={"replica": alias, "error": str(error)})
        _connection_drop(alias)
        return ReplicaState(usable=False, checked_at=clock())
    if not recovering or replayed is None:
        return ReplicaState(usable=False, checked_at=clock())
    # Behind, and nothing replayed yet since it started: how far behind is unknown.
    lag = 0.0 if replayed >= primary else (float("inf") if since_replay is None else max(0.0, since_replay))
    usable = lag <= settings.CORE_REPLICA_MAX_LAG_SECONDS
    return ReplicaState(usable=usable, replayed=replayed, lag_seconds=lag, checked_at=clock())


def _connection_drop(alias: str) -> None:
    try:
        connections[alias].close()
    except DatabaseError:
        pass
