"""`Idempotency-Key` on every mutating route (R-2.6).

The first request with a key claims a row (a unique constraint decides races);
a successful answer is stored on it and replayed for a retry with the same body.
A failed answer releases the claim, so a corrected retry runs. The same key with
another body, or while the first is still running, is refused.
"""
from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta

from django.db import IntegrityError
from django.utils import timezone

from core_memory.api.models import IdempotentRequest
from core_memory.base.errors import ApplicationError, Conflict
from core_memory.base.storable import UNSTORABLE_CHARACTERS
from core_memory.base.transactions import lazily_committed

HEADER = "HTTP_IDEMPOTENCY_KEY"
RETENTION = timedelta(hours=24)
MUTATING_METHODS = {"POST", "PUT", "PATCH", "DELETE"}
PATH_LENGTH = IdempotentRequest._meta.get_field("path").max_length


class IdempotencyMismatch(ApplicationError):
    status_code = 422
    error_type = "idempotency_error"


def request_fingerprint(*, method: str, path: str, body: bytes, person: str | None = None) -> str:
    """The request as the replay must match it. The person (a subject token's, or the
    X-Core-Subject header) is part of it: one key speaks for many persons, and one
    person's answer must never be replayed to another (R-12.1)."""
    try:
        canonical = json.dumps(json.loads(body or b"null"), sort_keys=True, separators=(",", ":")).encode()
    except (ValueError, RecursionError):
        canonical = body
    spoken_for = b"" if person is None else b"\nperson " + json.dumps(person).encode()
    return hashlib.sha256(method.encode() + b" " + path.encode() + spoken_for + b"\n" + canonical).hexdigest()


def idempotency_claim(
    *, key_id: str, idempotency_key: str, method: str, path: str, body: bytes, person: str | None = None
) -> tuple[IdempotentRequest, bool]:
    """Returns (row, is_replay)."""
    if len(idempotency_key) > 255 or not idempotency_key.strip() or UNSTORABLE_CHARACTERS.search(idempotency_key):
        raise ApplicationError("Idempotency-Key must be 1 to 255 characters, none of them NUL.", param="Idempotency-Key")
    fingerprint = request_fingerprint(method=method, path=path, body=body, person=person)
    IdempotentRequest.objects.for_key(key_id).filter(idempotency_key=idempotency_key, created_at__lt=timezone.now() - RETENTION).delete()
    try:
        # The claim need not wait for the disk: the request's answer is stored by a later commit
        # that waits, and a claim lost in a crash of the database lost its request with it.
        with lazily_committed():
            row = IdempotentRequest.objects.create(
                key_id=key_id,
                idempotency_key=idempotency_key,
                method=method,
                path=path[:PATH_LENGTH],  # for reading only; the fingerprint covers the whole address
                request_hash=fingerprint,
            )
        return row, False
    except IntegrityError:
        row = IdempotentRequest.objects.for_key(key_id).get(idempotency_key=idempotency_key)
    if row.request_hash != fingerprint:
        raise IdempotencyMismatch(
            "This Idempotency-Key was used with another request; use a new key.", param="Idempotency-Key"
        )
    if row.state != IdempotentRequest.State.COMPLETED:
        raise Conflict("A request with this Idempotency-Key is still running.", param="Idempotency-Key")
    return row, True


def idempotency_complete(*, row: IdempotentRequest, status_code: int, body) -> None:
    if 200 <= status_code < 300:
        row.state = IdempotentRequest.State.COMPLETED
        row.status_code = status_code
        row.response_body = body
        row.save(update_fields=["state", "status_code", "response_body"])
    else:
        idempotency_release(row=row)


def idempotency_release(*, row: IdempotentRequest) -> None:
    row.delete()


def idempotency_purge(*, now: datetime | None = None) -> int:
    """Forget answers older than RETENTION (beat, hourly); a claim is checked against
    RETENTION too, so an expired row never replays even before it is purged."""
    deleted, _ = IdempotentRequest.objects.unscoped().filter(created_at__lt=(now or timezone.now()) - RETENTION).delete()
    return deleted
