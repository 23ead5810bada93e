"""Onboarding (`createorg`): an organisation and its owner key, made together."""
from __future__ import annotations

from django.db import transaction

from core_memory.base.callers import Caller
from core_memory.keys.models import ALL_INDEXES, KEY_CAPABILITIES, ApiKey
from core_memory.keys.services import key_create
from core_memory.organisations.models import Organisation


@transaction.atomic(durable=True)
def organisation_create(*, name: str, timezone: str = "UTC", capabilities: list[str] | None = None) -> tuple[Organisation, ApiKey, str]:
    """An organisation and its first key: every capability, every index.

    Returns (organisation, key, secret); the secret is never stored.
    """
    organisation = Organisation(name=name, timezone=timezone, capabilities=sorted(set(capabilities or [])))
    organisation.full_clean()
    organisation.save()
    key, secret = key_create(
        organisation=organisation,
        caller=Caller.system(organisation_id=organisation.id, actor="createorg"),
        name="owner",
        capabilities=list(KEY_CAPABILITIES),
        policy={"read": [ALL_INDEXES], "write": [ALL_INDEXES]},
    )
    return organisation, key, secret
