"""Idempotent replays never keep a secret in clear (R-2.6 with R-3.2's "shown once")."""
import pytest

from core_memory.base.api.models import IdempotentRequest
from core_memory.keys.models import ApiKey

pytestmark = pytest.mark.django_db


def test_replayed_key_creation_answers_the_same_key_without_its_secret(tenant):
    """R-2.6, R-3.2: the retry writes nothing new; the secret is not stored for the replay."""
    url = f"/v1/tenants/{tenant.organisation.id}/keys"
    body = {"name": "ci", "capabilities": ["knowledge"], "policy": {"read": ["*"], "write": []}}
    first = tenant.client().post(url, body, format="json", HTTP_IDEMPOTENCY_KEY="create-ci")
    again = tenant.client().post(url, body, format="json", HTTP_IDEMPOTENCY_KEY="create-ci")

    assert first.status_code == again.status_code == 201
    assert first.json()["key"].startswith("core_sk_")
    assert again.json()["id"] == first.json()["id"]
    assert again.json()["key"] is None
    assert ApiKey.objects.filter(organisation=tenant.organisation, name="ci").count() == 1
    stored = IdempotentRequest.objects.get(idempotency_key="create-ci")
    assert first.json()["key"] not in str(stored.response_body)


def test_replayed_subject_token_does_not_keep_the_token(tenant):
    """R-2.6, R-3.3."""
    body = {"subject": "anna", "ttl_seconds": 60}
    first = tenant.client().post("/v1/subject-tokens", body, format="json", HTTP_IDEMPOTENCY_KEY="token-anna")
    again = tenant.client().post("/v1/subject-tokens", body, format="json", HTTP_IDEMPOTENCY_KEY="token-anna")

    assert first.status_code == again.status_code == 201
    assert first.json()["token"].startswith("core_st_")
    assert again.json()["token"] is None
    assert first.json()["token"] not in str(IdempotentRequest.objects.get(idempotency_key="token-anna").response_body)
