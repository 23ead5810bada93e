from __future__ import annotations

import pytest

from audit.models import AuditEvent
from core_memory.keys.models import ApiKey, SubjectToken
from core_memory.organisations.models import Organisation
from core_memory.persons.models import Person

MODELS = [
    {"id": "jouw-chatmodel", "provider": "openai", "base_url": "http://models.invalid/v1", "api_key_env": "SECRET_ENV_NAME"},
    {"id": "helper", "provider": "openai", "base_url": "http://helper.invalid/v1", "api_key_env": None},
]

# A memory injection block with nothing set, as keys and agents store it.
INJECTION_BLOCK_DEFAULTS = {
    "enabled": False,
    "index_id": None,
    "types": [],
    "metadata": {},
    "min_confidence": 0.0,
    "limit": 20,
    "token_budget": 1500,
}
# A key's memory configuration with nothing set.
KEY_MEMORY_DEFAULTS = {
    "retrieval_tool": True,
    "write_tool": False,
    "injection": INJECTION_BLOCK_DEFAULTS,
    "decay": {"half_life_days": {}},
}


@pytest.fixture(autouse=True)
def core_models(settings):
    settings.CORE_MODELS = [dict(model) for model in MODELS]
    return settings.CORE_MODELS


def written_state() -> tuple:
    """Everything a platform route could write, to assert a denial wrote nothing."""
    return (
        AuditEvent.objects.count(),
        tuple(ApiKey.objects.order_by("id").values_list("id", "name", "capabilities", "policy", "memory", "revoked_at")),
        tuple(Organisation.objects.order_by("id").values_list("id", "name", "updated_at")),
        tuple(Person.objects.order_by("id").values_list("organisation_id", "subject", "helper_model_may_read")),
        SubjectToken.objects.count(),
    )


@pytest.fixture
def state():
    return written_state
