"""Key reads, scoped to one organisation: another organisation's key is a 404."""
from __future__ import annotations

from datetime import timedelta

from django.db.models import QuerySet
from django.utils import timezone

from core_memory.base.callers import Caller
from core_memory.base.errors import NotFound
from core_memory.keys.models import ApiKey, KeyTrailEntry, SubjectToken
from core_memory.organisations.models import Organisation


def key_list(*, organisation: Organisation) -> QuerySet[ApiKey]:
    """Every key of the organisation, revoked ones included."""
    return ApiKey.objects.for_organisation(organisation)


def key_get(*, organisation: Organisation, key_id: str) -> ApiKey:
    key = ApiKey.objects.for_organisation(organisation).filter(id=key_id).first()
    if key is None:
        raise NotFound("No such key.")
    return key


def key_was_issued(*, organisation: Organisation, key_id: str) -> bool:
    """True for a key of the organisation that exists, or was deleted within the retention period."""
    if ApiKey.objects.for_organisation(organisation).filter(id=key_id).exists():
        return True
    horizon = timezone.now() - timedelta(days=organisation.audit_retention_days)
    return (
        KeyTrailEntry.objects.for_organisation(organisation)
        .filter(key_id=key_id, event=KeyTrailEntry.Event.DELETED, at__gte=horizon)
        .exists()
    )


def subject_tokens_counted(*, caller: Caller, subject: str) -> int:
    """How many subject tokens were minted for the person (what erasing her removes)."""
    return SubjectToken.objects.for_organisation(caller.organisation_id).filter(subject=subject).count()
