"""Per-key rate limits: a token bucket on a shared store, 429 with Retry-After, per organisation
(issue 11, issue 20)."""
import os
import time
import uuid

import pytest
import redis

from core_memory.base.api import throttling
from memory.models import MemoryRecord
from rest_framework.test import APIClient

from tests.factories import client_for

REDIS_URL = os.environ.get("REDIS_URL", "")

needs_redis = pytest.mark.skipif(not REDIS_URL, reason="REDIS_URL is unset: the buckets are kept in Redis")
pytestmark = [pytest.mark.django_db]


@pytest.fixture(autouse=True)
def counted_in_redis(settings):
    """A key prefix of this test's own on the shared Redis, so parallel runs never share counts."""
    settings.CORE_RATE_LIMIT_URL = REDIS_URL
    settings.CORE_RATE_LIMIT_PREFIX = f"test-rate-{uuid.uuid4().hex}"
    settings.CORE_RATE_LIMIT_PER_MINUTE = 6000
    settings.CORE_RATE_LIMIT_BURST = 1000
    yield settings.CORE_RATE_LIMIT_PREFIX
    if REDIS_URL:
        client = redis.Redis.from_url(REDIS_URL)
        for name in client.scan_iter(f"{settings.CORE_RATE_LIMIT_PREFIX}:*"):
            client.delete(name)


@pytest.fixture(params=["redis", "process"])
def store(request, settings):
    """Each bucket behaviour holds in Redis and in the fallback of one process alike."""
    if request.param == "redis":
        if not REDIS_URL:
            pytest.skip("REDIS_URL is unset: the buckets are kept in Redis")
        settings.CORE_RATE_LIMIT_URL = REDIS_URL
    else:
        settings.CORE_RATE_LIMIT_URL = ""
    return request.param


@pytest.fixture
def limited(tenant):
    tenant.organisation.rate_limit_per_minute = 3
    tenant.organisation.save()
    return tenant


# --- the bucket ----------------------------------------------------------------------------------


def test_a_full_bucket_takes_a_burst_then_refuses_until_it_refills(store, settings):
    settings.CORE_RATE_LIMIT_BURST = 5
    name, now = f"bucket-{uuid.uuid4().hex}", 1_000_000.0

    waits = [throttling.rate_limit_hit(name=name, limit=60, now=now) for _ in range(6)]

    assert waits == [None] * 5 + [1]


def test_the_bucket_refills_at_the_sustained_rate(store, settings):
    settings.CORE_RATE_LIMIT_BURST = 5
    name, now = f"bucket-{uuid.uuid4().hex}", 1_000_000.0
    for _ in range(5):
        throttling.rate_limit_hit(name=name, limit=60, now=now)

    one_second_later = [throttling.rate_limit_hit(name=name, limit=60, now=now + 1) for _ in range(2)]

    assert one_second_later == [None, 1]


def test_a_quiet_spell_refills_the_bucket_no_further_than_its_burst(store, settings):
    settings.CORE_RATE_LIMIT_BURST = 5
    name, now = f"bucket-{uuid.uuid4().hex}", 1_000_000.0
    throttling.rate_limit_hit(name=name, limit=60, now=now)

    an_hour_later = [throttling.rate_limit_hit(name=name, limit=60, now=now + 3600) for _ in range(6)]

    assert an_hour_later == [None] * 5 + [1]


def test_the_wait_is_the_time_until_the_next_request_fits(store, settings):
    """At 6 a minute a request fits every 10 seconds."""
    settings.CORE_RATE_LIMIT_BURST = 1
    name, now = f"bucket-{uuid.uuid4().hex}", 1_000_000.0
    throttling.rate_limit_hit(name=name, limit=6, now=now)

    assert throttling.rate_limit_hit(name=name, limit=6, now=now + 4) == 6


def test_a_burst_never_exceeds_a_minutes_worth(store, settings):
    """An organisation that allows 3 a minute gets 3 at once, not the server's burst of 1000."""
    name, now = f"bucket-{uuid.uuid4().hex}", 1_000_000.0

    waits = [throttling.rate_limit_hit(name=name, limit=3, now=now) for _ in range(4)]

    assert waits == [None, None, None, 20]


def test_the_state_says_what_is_left_and_when_the_bucket_is_full(store, settings):
    settings.CORE_RATE_LIMIT_BURST = 10
    name, now = f"bucket-{uuid.uuid4().hex}", 1_000_000.0
    for _ in range(3):
        state = throttling.rate_limit_take(name=name, limit=60, now=now)

    assert (state.limit, state.burst, state.remaining, state.full_in, state.wait) == (60, 10, 7, 3, None)


# --- the API --------------------------------------------------------------------------------------


def test_a_key_over_its_organisations_limit_gets_a_429_with_retry_after(store, limited):
    client = limited.client()
    answers = [client.get("/v1/indexes").status_code for _ in range(3)]

    refused = client.get("/v1/indexes")

    assert answers == [200, 200, 200]
    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 20
    assert refused.json()["error"]["type"] == "rate_limit_error"
    assert refused.json()["error"]["message"] == f"Too many requests for this key; retry in {refused['Retry-After']} seconds."


def test_every_answer_tells_the_key_its_limit_and_what_is_left(store, limited):
    client = limited.client()

    first, second = client.get("/v1/indexes"), client.get("/v1/indexes")

    assert (first["X-RateLimit-Limit"], first["X-RateLimit-Burst"], first["X-RateLimit-Remaining"]) == ("3", "3", "2")
    assert second["X-RateLimit-Remaining"] == "1"
    assert 1 <= int(second["X-RateLimit-Reset"]) <= 40


def test_a_refusal_says_nothing_is_left(store, limited):
    client = limited.client()
    for _ in range(3):
        client.get("/v1/indexes")

    refused = client.get("/v1/indexes")

    assert (refused.status_code, refused["X-RateLimit-Remaining"]) == (429, "0")


def test_a_refused_write_writes_nothing(store, limited):
    client = limited.client()
    for _ in range(3):
        client.get("/v1/indexes")

    response = client.post("/v1/memory", {"index_id": limited.index.id, "type": "fact", "text": "Te veel"}, format="json")

    assert response.status_code == 429
    assert not MemoryRecord.objects.exists()


def test_each_key_has_its_own_count_and_a_subject_token_shares_its_keys(store, limited):
    other, _key = limited.key_client()
    token = limited.client().post("/v1/subject-tokens", {"subject": "anna"}, format="json").json()["token"]
    for _ in range(2):
        limited.client().get("/v1/indexes")

    assert client_for(token).get("/v1/indexes").status_code == 429
    assert other.get("/v1/indexes").status_code == 200


@needs_redis
def test_the_bucket_is_shared_by_every_process(limited, counted_in_redis):
    """Another web process (here: the empty bucket it left in Redis) took the same key's requests."""
    redis.Redis.from_url(REDIS_URL).hset(
        f"{counted_in_redis}:{limited.key.id}:bucket", mapping={"tokens": "0", "at": repr(time.time())}
    )

    assert limited.client().get("/v1/indexes").status_code == 429


def test_without_an_organisation_setting_the_servers_limit_applies(store, tenant, settings):
    settings.CORE_RATE_LIMIT_PER_MINUTE = 2
    client = tenant.client()

    assert [client.get("/v1/indexes").status_code for _ in range(3)] == [200, 200, 429]


def test_the_default_takes_a_backends_burst_of_a_thousand_and_then_a_hundred_a_second(store):
    """docs/decisions.md: 6000 a minute sustained and bursts of 1000, for a backend that serves
    many persons with one key."""
    name, now = f"bucket-{uuid.uuid4().hex}", 1_000_000.0
    burst = [throttling.rate_limit_hit(name=name, limit=6000, now=now) for _ in range(1001)]
    a_second_later = [throttling.rate_limit_hit(name=name, limit=6000, now=now + 1) for _ in range(101)]

    assert burst == [None] * 1000 + [1]
    assert a_second_later == [None] * 100 + [1]


def test_the_organisation_sets_its_limit_through_the_api(tenant, settings):
    response = tenant.client().patch(f"/v1/tenants/{tenant.organisation.id}", {"rate_limit_per_minute": 1200}, format="json")

    assert (response.status_code, response.json()["rate_limit_per_minute"]) == (200, 1200)
    tenant.organisation.refresh_from_db()
    assert tenant.organisation.key_rate_limit_per_minute() == 1200


def test_when_the_store_is_unreachable_requests_pass(limited, settings):
    """A limit protects; losing its store must not refuse every caller (logged instead)."""
    settings.CORE_RATE_LIMIT_URL = "redis://127.0.0.1:1/0"

    assert [limited.client().get("/v1/indexes").status_code for _ in range(5)] == [200] * 5


# --- requests without a valid credential, per address (issue 28) ---------------------------------


@pytest.mark.parametrize(
    "authorization",
    [
        pytest.param("Bearer core_sk_guessed", id="an-invalid-key"),
        pytest.param("Bearer core_st_guessed", id="an-invalid-token"),
        pytest.param("Basic YW5uYTpzZWNyZXQ=", id="another-scheme"),
        pytest.param(None, id="no-credential"),
    ],
)
def test_requests_without_a_valid_credential_are_limited_per_address(store, settings, tenant, authorization):
    """Issue 28: 80 requests with an invalid key in a row were 80 × 401, never limited. They take
    from their address's bucket (CORE_RATE_LIMIT_ANONYMOUS_PER_MINUTE); over it, a 429 with the
    bucket's headers. A valid key from the same address counts apart, and so does another address."""
    settings.CORE_RATE_LIMIT_ANONYMOUS_PER_MINUTE = 3
    headers = {"HTTP_AUTHORIZATION": authorization} if authorization else {}
    guesser = APIClient(REMOTE_ADDR="203.0.113.9", **headers)

    answers = [guesser.get("/v1/indexes").status_code for _ in range(3)]
    refused = guesser.get("/v1/indexes")

    assert answers == [401, 401, 401]
    assert refused.status_code == 429
    assert refused.json()["error"]["message"] == (
        f"Too many requests without a valid credential from this address; retry in {refused['Retry-After']} seconds."
    )
    assert (refused["X-RateLimit-Limit"], refused["X-RateLimit-Remaining"]) == ("3", "0")
    assert APIClient(REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION=f"Bearer {tenant.secret}").get("/v1/indexes").status_code == 200
    assert APIClient(REMOTE_ADDR="198.51.100.4", **headers).get("/v1/indexes").status_code == 401


def test_the_openai_surface_limits_an_invalid_key_in_its_own_error_shape(store, settings):
    settings.CORE_RATE_LIMIT_ANONYMOUS_PER_MINUTE = 1
    guesser = APIClient(REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION="Bearer core_sk_guessed")

    first, refused = guesser.get("/openai/v1/models"), guesser.get("/openai/v1/models")

    assert (first.status_code, refused.status_code) == (401, 429)
    assert refused.json()["error"]["code"] == "rate_limit_exceeded"
    assert refused["X-RateLimit-Remaining"] == "0" and int(refused["Retry-After"]) >= 1
