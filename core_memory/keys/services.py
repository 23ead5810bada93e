"""Key writes: each in its own transaction, audited in the same one (R-3.2, R-3.5, R-11.2)."""
from __future__ import annotations

from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from audit.services import audit_event_record
from core_memory.keys.configuration import memory_config_normalise
from core_memory.keys.models import (
    KEY_SECRET_PREFIX,
    SUBJECT_TOKEN_PREFIX,
    ApiKey,
    KeyTrailEntry,
    SubjectToken,
    new_secret,
    secret_hash,
)
from core_memory.organisations.models import Organisation

UPDATABLE_FIELDS = ("name", "capabilities", "policy", "memory", "pii_redaction", "expires_at")


def _trail(*, organisation: Organisation, key_id: str, event: str, at: datetime | None = None) -> None:
    KeyTrailEntry.objects.get_or_create(
        key_id=key_id, event=event, defaults={"organisation": organisation, "at": at or timezone.now()}
    )


@transaction.atomic
def key_create(
    *,
    organisation: Organisation,
    actor: str,
    name: str,
    capabilities: list[str],
    policy: dict,
    memory: dict | None = None,
    pii_redaction: bool = False,
    expires_at: datetime | None = None,
) -> tuple[ApiKey, str]:
    """A new key and its secret (shown once, stored hashed)."""
    secret = new_secret(KEY_SECRET_PREFIX)
    key = ApiKey.objects.create(
        organisation=organisation,
        name=name,
        capabilities=sorted(set(capabilities)),
        policy={"read": list(policy.get("read", [])), "write": list(policy.get("write", []))},
        memory=memory_config_normalise(memory),
        pii_redaction=pii_redaction,
        expires_at=expires_at,
        secret_hash=secret_hash(secret),
        secret_hint=secret[-4:],
    )
    _trail(organisation=organisation, key_id=key.id, event=KeyTrailEntry.Event.CREATED)
    audit_event_record(organisation=organisation, actor=actor, action="key.created", target=key.id, details={"name": name})
    return key, secret


@transaction.atomic
def key_update(*, key: ApiKey, actor: str, changes: dict) -> ApiKey:
    fields = [field for field in UPDATABLE_FIELDS if field in changes]
    for field in fields:
        value = changes[field]
        if field == "capabilities":
            value = sorted(set(value))
        if field == "memory":
            value = memory_config_normalise(value)
        setattr(key, field, value)
    if fields:
        key.save(update_fields=[*fields, "updated_at"])
        audit_event_record(
            organisation=key.organisation_id, actor=actor, action="key.updated", target=key.id, details={"fields": fields}
        )
    return key


@transaction.atomic
def key_revoke(*, key: ApiKey, actor: str) -> ApiKey:
    locked = ApiKey.objects.select_for_update().get(pk=key.pk)
    if locked.revoked_at is None:
        locked.revoked_at = timezone.now()
        locked.save(update_fields=["revoked_at", "updated_at"])
        _trail(organisation=locked.organisation, key_id=locked.id, event=KeyTrailEntry.Event.REVOKED, at=locked.revoked_at)
        audit_event_record(organisation=locked.organisation_id, actor=actor, action="key.revoked", target=locked.id)
    return locked


@transaction.atomic
def key_delete(*, key: ApiKey, actor: str) -> None:
    """Removes the key for good; its id stays in the key trail for the retention period (R-3.5)."""
    _trail(organisation=key.organisation, key_id=key.id, event=KeyTrailEntry.Event.DELETED)
    audit_event_record(organisation=key.organisation_id, actor=actor, action="key.deleted", target=key.id)
    key.delete()


def keys_expiry_record(*, now: datetime | None = None) -> int:
    """Note each key that has expired in its organisation's key trail (beat, hourly)."""
    now = now or timezone.now()
    expired = ApiKey.objects.filter(expires_at__lte=now).exclude(
        id__in=KeyTrailEntry.objects.filter(event=KeyTrailEntry.Event.EXPIRED).values("key_id")
    ).select_related("organisation")
    count = 0
    for key in expired:
        with transaction.atomic():
            _trail(organisation=key.organisation, key_id=key.id, event=KeyTrailEntry.Event.EXPIRED, at=key.expires_at)
        count += 1
    return count


def key_trail_purge(*, now: datetime | None = None) -> int:
    """Forget trail entries older than the organisation's retention: such ids count as never issued."""
    from django.db.models import F

    now = now or timezone.now()
    deleted, _ = KeyTrailEntry.objects.filter(at__lt=now - timedelta(days=1) * F("organisation__audit_retention_days")).exclude(
        key_id__in=ApiKey.objects.values("id")
    ).delete()
    return deleted


@transaction.atomic
def subject_token_create(*, key: ApiKey, subject: str, ttl_seconds: int) -> tuple[SubjectToken, str]:
    secret = new_secret(SUBJECT_TOKEN_PREFIX)
    expires_at = timezone.now() + timedelta(seconds=ttl_seconds)
    if key.expires_at is not None:
        expires_at = min(expires_at, key.expires_at)
    token = SubjectToken.objects.create(key=key, subject=subject, secret_hash=secret_hash(secret), expires_at=expires_at)
    return token, secret
