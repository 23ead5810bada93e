"""Key writes: each in its own transaction, audited in the same one."""
from __future__ import annotations

from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext

from audit.services import audit_event_record
from core_memory.base.errors import Conflict, NotFound, Unprocessable
from core_memory.base.callers import Caller
from core_memory.keys.configuration import memory_config_normalise
from core_memory.keys.models import (
    ALL_INDEXES,
    KEY_SECRET_PREFIX,
    SUBJECT_TOKEN_PREFIX,
    ApiKey,
    KeyTrailEntry,
    SubjectToken,
    new_secret,
    secret_hash,
)
from core_memory.organisations.models import Organisation
from core_memory.persons.services import person_ensure
from stores.models import KnowledgeIndex

UPDATABLE_FIELDS = ("name", "capabilities", "policy", "memory", "pii_redaction", "expires_at")


def _trail(*, organisation: Organisation, key_id: str, event: str, at: datetime | None = None) -> bool:
    """Notes the event once; True when this call noted it (another worker may have, just now)."""
    _entry, created = KeyTrailEntry.objects.get_or_create(
        key_id=key_id, event=event, defaults={"organisation": organisation, "at": at or timezone.now()}
    )
    return created


def key_rights_validate(
    *, organisation: Organisation, capabilities: list[str], policy: dict | None = None, memory: dict | None = None
) -> None:
    """Cross-row rules of a key's rights; the shapes are checked by the API's serializers.

    `memory` needs `knowledge`; the given policy and injection block name indexes of this
    organisation only (or "*"). A policy or memory left out (None) is not checked: an index
    deleted since must not block an unrelated change. Raises Unprocessable naming the field.
    """
    if "memory" in capabilities and "knowledge" not in capabilities:
        raise Unprocessable(gettext("The capability 'memory' needs 'knowledge'."), param="capabilities")
    named_at = [
        (index_id, f"policy.{right}[{position}]")
        for right in ("read", "write")
        for position, index_id in enumerate((policy or {}).get(right, []))
        if index_id != ALL_INDEXES
    ]
    injection_index_id = ((memory or {}).get("injection") or {}).get("index_id")
    if injection_index_id:
        named_at.append((injection_index_id, "memory.injection.index_id"))
    known = _live_index_ids(organisation=organisation, index_ids={index_id for index_id, _ in named_at})
    for index_id, param in named_at:
        if index_id not in known:
            raise Unprocessable(gettext("No index %(index)s in this organisation.") % {"index": repr(index_id)}, param=param)


def _policy_whole(policy: dict) -> dict:
    return {"read": list(policy.get("read", [])), "write": list(policy.get("write", []))}


def _live_index_ids(*, organisation: Organisation, index_ids: set[str]) -> set[str]:
    if not index_ids:
        return set()
    indexes = KnowledgeIndex.objects.for_organisation(organisation).live().filter(id__in=index_ids)
    return set(indexes.values_list("id", flat=True))


@transaction.atomic
def key_create(
    *,
    organisation: Organisation,
    caller: Caller,
    name: str,
    capabilities: list[str],
    policy: dict,
    memory: dict | None = None,
    pii_redaction: bool = False,
    expires_at: datetime | None = None,
) -> tuple[ApiKey, str]:
    """A new key and its secret (shown once, stored hashed)."""
    memory = memory_config_normalise(memory)
    key_rights_validate(organisation=organisation, capabilities=capabilities, policy=policy, memory=memory)
    secret = new_secret(KEY_SECRET_PREFIX)
    key = ApiKey.objects.create(
        organisation=organisation,
        name=name,
        capabilities=sorted(set(capabilities)),
        policy=_policy_whole(policy),
        memory=memory,
        pii_redaction=pii_redaction,
        expires_at=expires_at,
        secret_hash=secret_hash(secret),
        secret_hint=secret[-4:],
    )
    _trail(organisation=organisation, key_id=key.id, event=KeyTrailEntry.Event.CREATED)
    audit_event_record(caller=caller, action="key.created", target=key.id, details={"name": name})
    return key, secret


@transaction.atomic
def key_update(*, caller: Caller, key_id: str, changes: dict) -> ApiKey:
    """Replaces the given fields of a key of the caller's organisation (a given `memory` or
    `policy` replaces the whole object)."""
    key = _key_locked(caller=caller, key_id=key_id)
    if key.revoked_at is not None:
        # Revocation is final: a revoked key is kept to be read, not to be revived.
        raise Conflict(gettext("This key is revoked; create a new key instead."), param=None)
    fields = [field for field in UPDATABLE_FIELDS if field in changes]
    for field in fields:
        value = changes[field]
        if field == "capabilities":
            value = sorted(set(value))
        if field == "policy":
            value = _policy_whole(value)
        if field == "memory":
            value = memory_config_normalise(value)
        setattr(key, field, value)
    key_rights_validate(
        organisation=key.organisation,
        capabilities=key.capabilities,
        policy=key.policy if "policy" in fields else None,
        memory=key.memory if "memory" in fields else None,
    )
    if fields:
        key.save(update_fields=[*fields, "updated_at"])
        audit_event_record(
            caller=caller, action="key.updated", target=key.id, details={"fields": fields}
        )
    return key


@transaction.atomic
def key_revoke(*, caller: Caller, key_id: str) -> ApiKey:
    """Revokes a key of the caller's organisation, for good."""
    locked = _key_locked(caller=caller, key_id=key_id)
    if locked.revoked_at is None:
        locked.revoked_at = timezone.now()
        locked.save(update_fields=["revoked_at", "updated_at"])
        _trail(organisation=locked.organisation, key_id=locked.id, event=KeyTrailEntry.Event.REVOKED, at=locked.revoked_at)
        audit_event_record(caller=caller, action="key.revoked", target=locked.id)
    return locked


@transaction.atomic
def key_delete(*, caller: Caller, key_id: str) -> None:
    """Removes a key of the caller's organisation for good; its id stays in the key trail for the
    retention period."""
    key = _key_locked(caller=caller, key_id=key_id)
    _trail(organisation=key.organisation, key_id=key.id, event=KeyTrailEntry.Event.DELETED)
    audit_event_record(caller=caller, action="key.deleted", target=key.id)
    key.delete()


def _key_locked(*, caller: Caller, key_id: str) -> ApiKey:
    """A key of the caller's organisation, locked for a change; another organisation's is a 404."""
    key = ApiKey.objects.for_organisation(caller.organisation_id).select_for_update(of=("self",)).select_related("organisation").filter(pk=key_id).first()
    if key is None:
        raise NotFound("No such key.")
    return key


def keys_expiry_record(*, now: datetime | None = None) -> int:
    """Note each key that has expired in its organisation's key trail (beat, hourly)."""
    now = now or timezone.now()
    expired = (
        ApiKey.objects.unscoped()
        .filter(expires_at__lte=now)
        .exclude(id__in=KeyTrailEntry.objects.unscoped().filter(event=KeyTrailEntry.Event.EXPIRED).values("key_id"))
        .select_related("organisation")
    )
    count = 0
    for key in expired:
        with transaction.atomic():
            # Two workers may both find the key: only the one that notes it counts it.
            count += _trail(organisation=key.organisation, key_id=key.id, event=KeyTrailEntry.Event.EXPIRED, at=key.expires_at)
    return count


def key_trail_purge(*, now: datetime | None = None) -> int:
    """Forget trail entries older than the organisation's retention: such ids count as never issued.

    Entries of keys that still exist stay: the key itself still shows it was issued.
    `interval * integer` runs on PostgreSQL (tests/core_memory/keys/test_trail.py).
    """
    now = now or timezone.now()
    horizon = now - timedelta(days=1) * F("organisation__audit_retention_days")
    deleted, _ = (
        KeyTrailEntry.objects.unscoped().filter(at__lt=horizon).exclude(key_id__in=ApiKey.objects.unscoped().values("id")).delete()
    )
    return deleted


@transaction.atomic
def subject_token_create(*, caller: Caller, ttl_seconds: int) -> tuple[SubjectToken, str]:
    """A token acting as the caller's key for the caller's person; it never outlives its key.
    Names the person."""
    key, subject = caller.key, caller.subject
    if subject is None:
        raise ValueError("A subject token is for one person: the caller names none.")
    person_ensure(organisation=key.organisation, subject=subject)
    secret = new_secret(SUBJECT_TOKEN_PREFIX)
    expires_at = timezone.now() + timedelta(seconds=ttl_seconds)
    if key.expires_at is not None:
        expires_at = min(expires_at, key.expires_at)
    token = SubjectToken.objects.create(key=key, subject=subject, secret_hash=secret_hash(secret), expires_at=expires_at)
    return token, secret


def subject_tokens_erase(*, caller: Caller, subject: str) -> int:
    """Removes every subject token of the person; part of erasing her (core_memory.flows.erasure)."""
    deleted, _ = SubjectToken.objects.for_organisation(caller.organisation_id).filter(subject=subject).delete()
    return deleted
