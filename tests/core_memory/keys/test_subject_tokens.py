from datetime import timedelta

import pytest
from django.utils import timezone

from core_memory.keys.models import SubjectToken
from core_memory.persons.models import Person
from tests.factories import client_for

pytestmark = pytest.mark.django_db


def mint(client, **body):
    return client.post("/v1/subject-tokens", {"subject": "anna", **body}, format="json")


def test_a_key_mints_a_token_for_one_person(tenant):
    """R-3.3: `{"token": "core_st_…", "subject", "expires_at"}`, default one hour."""
    before = timezone.now()
    response = mint(tenant.client())

    assert response.status_code == 201
    body = response.json()
    assert body["token"].startswith("core_st_")
    token = SubjectToken.objects.get()
    assert body == {"token": body["token"], "subject": "anna", "expires_at": token.expires_at.isoformat().replace("+00:00", "Z")}
    assert token.key_id == tenant.key.id
    assert before + timedelta(seconds=3600) <= token.expires_at <= timezone.now() + timedelta(seconds=3600)
    assert Person.objects.filter(organisation=tenant.organisation, subject="anna").exists()


def test_a_key_without_any_capability_may_mint(tenant):
    """R-2.7: `/v1/subject-tokens` needs no capability."""
    client, _ = tenant.key_client(capabilities=())

    assert mint(client, ttl_seconds=60).status_code == 201


def test_the_token_acts_as_its_key_for_its_person(tenant):
    """R-3.3, R-2.2: the token's person is the request's person."""
    token = mint(tenant.client()).json()["token"]
    client = client_for(token)

    assert client.get("/v1/indexes").status_code == 200
    assert client.patch("/v1/persons/anna", {"helper_model_may_read": False}, format="json").status_code == 200
    assert Person.objects.get(subject="anna").helper_model_may_read is False


def test_the_token_cannot_act_for_another_person(tenant):
    """R-2.2: token plus a different X-Core-Subject is a 403; so is another person in the path."""
    token = mint(tenant.client()).json()["token"]

    other_header = client_for(token, subject="bert").get("/v1/indexes")
    same_header = client_for(token, subject="anna").get("/v1/indexes")
    other_path = client_for(token).patch("/v1/persons/bert", {"helper_model_may_read": False}, format="json")

    assert other_header.status_code == 403
    assert other_header.json()["error"]["param"] == "X-Core-Subject"
    assert same_header.status_code == 200
    assert other_path.status_code == 403
    assert not Person.objects.filter(subject="bert").exists()


def test_the_token_is_limited_by_its_keys_capabilities(tenant):
    """R-3.3: the token has the minting key's rights, no more."""
    client, _ = tenant.key_client(capabilities=("knowledge",))
    token = mint(client).json()["token"]

    response = client_for(token).patch("/v1/persons/anna", {"helper_model_may_read": False}, format="json")

    assert response.status_code == 403
    assert Person.objects.get(subject="anna").helper_model_may_read is True


def test_a_subject_token_may_not_mint_another(tenant):
    """R-3.3."""
    token = mint(tenant.client()).json()["token"]

    response = mint(client_for(token))

    assert response.status_code == 403
    assert SubjectToken.objects.count() == 1


def test_an_expired_token_is_a_401(tenant):
    """R-2.1."""
    token = mint(tenant.client(), ttl_seconds=60).json()["token"]
    SubjectToken.objects.update(expires_at=timezone.now() - timedelta(seconds=1))

    response = client_for(token).get("/v1/indexes")

    assert response.status_code == 401
    assert response.json()["error"]["type"] == "authentication_error"


def test_a_token_of_a_revoked_key_is_a_401(tenant):
    """R-2.1: the token is no stronger than its key."""
    client, key = tenant.key_client()
    token = mint(client).json()["token"]

    tenant.client().delete(f"/v1/tenants/{tenant.organisation.id}/keys/{key.id}")

    assert client_for(token).get("/v1/indexes").status_code == 401


def test_a_token_never_outlives_its_key(tenant):
    """R-3.3."""
    expires_at = timezone.now() + timedelta(minutes=5)
    client, key = tenant.key_client(expires_at=expires_at)

    mint(client, ttl_seconds=3600)

    assert SubjectToken.objects.get(key=key).expires_at == expires_at


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"ttl_seconds": 0}, "ttl_seconds"),
        ({"ttl_seconds": 2_592_001}, "ttl_seconds"),
        ({"subject": ""}, "subject"),
        ({"subject": "   "}, "subject"),
        ({"subject": "x" * 256}, "subject"),
        ({"scope": "all"}, "scope"),
    ],
)
def test_bad_token_requests_are_a_400_naming_the_field(tenant, body, param):
    """R-3.3, R-2.3."""
    response = mint(tenant.client(), **body)

    assert response.status_code == 400
    assert response.json()["error"]["param"] == param
    assert SubjectToken.objects.count() == 0


def test_the_longest_ttl_is_thirty_days(tenant):
    """R-3.3: 1..2592000 seconds."""
    assert mint(tenant.client(), ttl_seconds=2_592_000).status_code == 201
