"""Per-key rate limits on a shared store: 429 with Retry-After, per organisation (issue 11)."""
import os
import uuid

import pytest
import redis

from core_memory.api import throttling
from memory.models import MemoryRecord
from tests.factories import client_for

REDIS_URL = os.environ.get("REDIS_URL", "")

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(not REDIS_URL, reason="REDIS_URL is unset: the limits are counted in Redis"),
]


@pytest.fixture(autouse=True)
def counted_in_redis(settings):
    """A key prefix of this test's own on the shared Redis, so parallel runs never share counts."""
    settings.CORE_RATE_LIMIT_URL = REDIS_URL
    settings.CORE_RATE_LIMIT_PREFIX = f"test-rate-{uuid.uuid4().hex}"
    settings.CORE_RATE_LIMIT_PER_MINUTE = 600
    yield settings.CORE_RATE_LIMIT_PREFIX
    client = redis.Redis.from_url(REDIS_URL)
    for name in client.scan_iter(f"{settings.CORE_RATE_LIMIT_PREFIX}:*"):
        client.delete(name)


@pytest.fixture
def limited(tenant):
    tenant.organisation.rate_limit_per_minute = 3
    tenant.organisation.save()
    return tenant


def test_a_key_over_its_organisations_limit_gets_a_429_with_retry_after(limited):
    client = limited.client()
    answers = [client.get("/v1/indexes").status_code for _ in range(3)]

    refused = client.get("/v1/indexes")

    assert answers == [200, 200, 200]
    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 60
    assert refused.json()["error"]["type"] == "rate_limit_error"
    assert refused.json()["error"]["message"] == f"Too many requests for this key; retry in {refused['Retry-After']} seconds."


def test_a_refused_write_writes_nothing(limited):
    client = limited.client()
    for _ in range(3):
        client.get("/v1/indexes")

    response = client.post("/v1/memory", {"index_id": limited.index.id, "type": "fact", "text": "Te veel"}, format="json")

    assert response.status_code == 429
    assert not MemoryRecord.objects.exists()


def test_each_key_has_its_own_count_and_a_subject_token_shares_its_keys(limited):
    other, _key = limited.key_client()
    token = limited.client().post("/v1/subject-tokens", {"subject": "anna"}, format="json").json()["token"]
    for _ in range(2):
        limited.client().get("/v1/indexes")

    assert client_for(token).get("/v1/indexes").status_code == 429
    assert other.get("/v1/indexes").status_code == 200


def test_the_count_is_shared_by_every_process(limited, counted_in_redis):
    """Another web process (here: the count it left in Redis) uses up the same minute."""
    window = int(__import__("time").time() // throttling.WINDOW_SECONDS)
    redis.Redis.from_url(REDIS_URL).set(f"{counted_in_redis}:{limited.key.id}:{window}", 3, ex=120)

    assert limited.client().get("/v1/indexes").status_code == 429


def test_without_an_organisation_setting_the_servers_limit_applies(tenant, settings):
    settings.CORE_RATE_LIMIT_PER_MINUTE = 2
    client = tenant.client()

    assert [client.get("/v1/indexes").status_code for _ in range(3)] == [200, 200, 429]


def test_the_organisation_sets_its_limit_through_the_api(tenant, settings):
    response = tenant.client().patch(f"/v1/tenants/{tenant.organisation.id}", {"rate_limit_per_minute": 1200}, format="json")

    assert (response.status_code, response.json()["rate_limit_per_minute"]) == (200, 1200)
    tenant.organisation.refresh_from_db()
    assert tenant.organisation.key_rate_limit_per_minute() == 1200


def test_when_the_store_is_unreachable_requests_pass(limited, settings):
    """A limit protects; losing its store must not refuse every caller (logged instead)."""
    settings.CORE_RATE_LIMIT_URL = "redis://127.0.0.1:1/0"

    assert [limited.client().get("/v1/indexes").status_code for _ in range(5)] == [200] * 5
