"""`Idempotency-Key` on every mutating route.

The first request with a key claims a row (a unique constraint decides races);
a successful answer is stored on it and replayed for a retry with the same body.
A failed answer releases the claim, so a corrected retry runs. The same key with
another body, or while the first is still running, is refused.

"Still running" is a PostgreSQL session lock the claiming request holds on its own
connection until its answer is stored or its claim released. A request that died with
its claim (its worker killed, the database crashed under it) took its connection, and so
the lock, with it: the retry finds the claim unlocked, takes it over and runs, instead of
a 409 until the claim expired a day later.
"""
from __future__ import annotations

import hashlib
import json
import weakref
from datetime import datetime, timedelta

from django.db import IntegrityError, connection
from django.utils import timezone

from core_memory.base.api.models import IdempotentRequest
from core_memory.base.errors import ApplicationError, Conflict
from core_memory.base.storable import UNSTORABLE_CHARACTERS
from core_memory.base.transactions import lazily_committed

HEADER = "HTTP_IDEMPOTENCY_KEY"
RETENTION = timedelta(hours=24)
MUTATING_METHODS = {"POST", "PUT", "PATCH", "DELETE"}
PERSON_FIELDS = ("subject", "user")
PATH_LENGTH = IdempotentRequest._meta.get_field("path").max_length


class IdempotencyMismatch(ApplicationError):
    status_code = 422
    error_type = "idempotency_error"


def request_fingerprint(*, method: str, path: str, body: bytes, person: str | None = None) -> str:
    """The request as the replay must match it. The person (a subject token's, or the
    X-Core-Subject header) is part of it: one key speaks for many persons, and one
    person's answer must never be replayed to another."""
    try:
        canonical = json.dumps(json.loads(body or b"null"), sort_keys=True, separators=(",", ":")).encode()
    except (ValueError, RecursionError):
        canonical = body
    spoken_for = b"" if person is None else b"\nperson " + json.dumps(person).encode()
    return hashlib.sha256(method.encode() + b" " + path.encode() + spoken_for + b"\n" + canonical).hexdigest()


def idempotency_claim(
    *, key_id: str, idempotency_key: str, method: str, path: str, body: bytes, person: str | None = None, organisation_id: str
) -> tuple[IdempotentRequest, bool]:
    """Returns (row, is_replay). A row that is not a replay is this request's until
    `idempotency_complete` or `idempotency_release`."""
    if len(idempotency_key) > 255 or not idempotency_key.strip() or UNSTORABLE_CHARACTERS.search(idempotency_key):
        raise ApplicationError("Idempotency-Key must be 1 to 255 characters, none of them NUL.", param="Idempotency-Key")
    fingerprint = request_fingerprint(method=method, path=path, body=body, person=person)
    answers = IdempotentRequest.objects.for_key(key_id, organisation_id=organisation_id)
    answers.filter(idempotency_key=idempotency_key, created_at__lt=timezone.now() - RETENTION).delete()
    if not _lock(key_id=key_id, idempotency_key=idempotency_key):
        # Another request with this key is running now, or has just answered.
        row = answers.filter(idempotency_key=idempotency_key).first()
        _refuse_or_replay(row, fingerprint)
        return row, True
    try:
        try:
            # The claim need not wait for the disk: the request's answer is stored by a later commit
            # that waits, and a claim lost in a crash of the database lost its request with it.
            with lazily_committed():
                row = IdempotentRequest.objects.create(
                    organisation_id=organisation_id,
                    key_id=key_id,
                    idempotency_key=idempotency_key,
                    method=method,
                    path=path[:PATH_LENGTH],  # for reading only; the fingerprint covers the whole address
                    request_hash=fingerprint,
                )
            return row, False
        except IntegrityError:
            row = answers.get(idempotency_key=idempotency_key)
        if row.state != IdempotentRequest.State.COMPLETED and row.request_hash == fingerprint:
            # Claimed by a request that died without answering (we hold the lock it held): ours now.
            answers.filter(pk=row.pk).update(created_at=timezone.now())
            return row, False
    except BaseException:
        _unlock(key_id=key_id, idempotency_key=idempotency_key)
        raise
    _unlock(key_id=key_id, idempotency_key=idempotency_key)
    _refuse_or_replay(row, fingerprint)
    return row, True


def _refuse_or_replay(row: IdempotentRequest | None, fingerprint: str) -> None:
    """Refuses a retry that may not replay `row`; returns when it may."""
    if row is not None and row.request_hash != fingerprint:
        raise IdempotencyMismatch(
            "This Idempotency-Key was used with another request; use a new key.", param="Idempotency-Key"
        )
    if row is None or row.state != IdempotentRequest.State.COMPLETED:
        raise Conflict("A request with this Idempotency-Key is still running.", param="Idempotency-Key")


def persons_named(*documents) -> set[str]:
    """Every person a request or its answer names: the string values of their `subject` and
    `user` fields, at any depth. Erasing a person removes the stored answers that name her."""
    found: set[str] = set()
    pending = list(documents)
    while pending:
        value = pending.pop()
        if isinstance(value, dict):
            for name, inner in value.items():
                if name in PERSON_FIELDS and isinstance(inner, str):
                    found.add(inner)
                else:
                    pending.append(inner)
        elif isinstance(value, list):
            pending.extend(value)
    return found


def idempotency_complete(*, row: IdempotentRequest, status_code: int, body, persons: set[str] | frozenset = frozenset()) -> None:
    """Stores the answer for a replay, with the persons it is about (`persons`, and those the
    answer names), so that erasing one of them removes it."""
    if not 200 <= status_code < 300:
        idempotency_release(row=row)
        return
    try:
        row.state = IdempotentRequest.State.COMPLETED
        row.status_code = status_code
        row.response_body = body
        row.persons = sorted({*persons, *persons_named(body)})
        _row_of(row).update(state=row.state, status_code=row.status_code, response_body=row.response_body, persons=row.persons)
    finally:
        _unlock(key_id=row.key_id, idempotency_key=row.idempotency_key)


def _row_of(row: IdempotentRequest):
    return IdempotentRequest.objects.for_key(row.key_id, organisation_id=row.organisation_id).filter(pk=row.pk)


def idempotency_release(*, row: IdempotentRequest) -> None:
    try:
        _row_of(row).delete()
    finally:
        _unlock(key_id=row.key_id, idempotency_key=row.idempotency_key)


def idempotency_lock_id(*, key_id: str, idempotency_key: str) -> int:
    """The PostgreSQL advisory lock (a signed 64-bit number) a running request holds on its key."""
    digest = hashlib.sha256(f"idempotency\n{key_id}\n{idempotency_key}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


# The locks each open connection holds. PostgreSQL lets a session take a lock it holds again,
# so a request on the connection of one still running (a test client's, one thread for both)
# is told apart here.
_HELD: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _lock(*, key_id: str, idempotency_key: str) -> bool:
    lock_id = idempotency_lock_id(key_id=key_id, idempotency_key=idempotency_key)
    with connection.cursor() as cursor:
        held = _HELD.setdefault(connection.connection, set())
        if lock_id in held:
            return False
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [lock_id])
        if not cursor.fetchone()[0]:
            return False
    held.add(lock_id)
    return True


def _unlock(*, key_id: str, idempotency_key: str) -> None:
    # A session lock outlives transactions: taken in autocommit, given back only here (or with the connection).
    lock_id = idempotency_lock_id(key_id=key_id, idempotency_key=idempotency_key)
    if connection.connection is None:
        return  # closed: the lock went with it
    _HELD.get(connection.connection, set()).discard(lock_id)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_unlock(%s)", [lock_id])


def person_answers_erase(*, organisation_id: str, subject: str) -> int:
    """Forgets the organisation's stored answers about the person (erasure): a replay of one
    would hand back what was erased. A retry of such a request runs again."""
    deleted, _ = IdempotentRequest.objects.unscoped().filter(organisation_id=organisation_id, persons__contains=[subject]).delete()
    return deleted


def person_answers_counted(*, organisation_id: str, subject: str) -> int:
    return IdempotentRequest.objects.unscoped().filter(organisation_id=organisation_id, persons__contains=[subject]).count()


def idempotency_purge(*, now: datetime | None = None) -> int:
    """Forget answers older than RETENTION (beat, hourly); a claim is checked against
    RETENTION too, so an expired row never replays even before it is purged."""
    deleted, _ = IdempotentRequest.objects.unscoped().filter(created_at__lt=(now or timezone.now()) - RETENTION).delete()
    return deleted
