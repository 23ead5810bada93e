"""The permission matrix of every platform route (R-2.1, R-2.5, R-2.7): the right key
passes; a key without the capability gets 403, another organisation's key 404 and no
credential 401, and none of these denials writes anything."""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from core_memory.keys.models import KEY_CAPABILITIES
from core_memory.persons.models import Person

pytestmark = pytest.mark.django_db


@dataclass(frozen=True)
class Route:
    method: str
    path: str  # {org} and {key} are filled from the tenant and a second key of it
    capabilities: tuple[str, ...]
    success: int
    body: dict | None = None

    def call(self, client, *, tenant, target_key):
        url = self.path.format(org=tenant.organisation.id, key=target_key.id)
        return getattr(client, self.method.lower())(url, self.body, format="json")

    def __str__(self) -> str:
        return f"{self.method} {self.path}"


ROUTES = [
    Route("GET", "/v1/tenants/{org}", ("management",), 200),
    Route("PATCH", "/v1/tenants/{org}", ("management",), 200, {"name": "Renamed"}),
    Route("GET", "/v1/tenants/{org}/keys", ("management",), 200),
    Route("POST", "/v1/tenants/{org}/keys", ("management",), 201, {"name": "new"}),
    Route("GET", "/v1/tenants/{org}/keys/{key}", ("management",), 200),
    Route("PATCH", "/v1/tenants/{org}/keys/{key}", ("management",), 200, {"name": "renamed"}),
    Route("DELETE", "/v1/tenants/{org}/keys/{key}", ("management",), 200),
    Route("POST", "/v1/subject-tokens", (), 201, {"subject": "anna"}),
    Route("PATCH", "/v1/persons/anna", ("memory",), 200, {"helper_model_may_read": False}),
    Route("DELETE", "/v1/persons/anna", ("management",), 200),
    Route("GET", "/v1/models", (), 200),
    Route("GET", "/v1/audit", ("management",), 200),
]
ORGANISATION_ROUTES = [route for route in ROUTES if "{org}" in route.path]
CAPABILITY_ROUTES = [route for route in ROUTES if route.capabilities]


@pytest.fixture
def target_key(tenant):
    _, key = tenant.key_client(name="target")
    return key


def without(capabilities: tuple[str, ...]) -> tuple[str, ...]:
    remaining = tuple(capability for capability in KEY_CAPABILITIES if capability not in capabilities)
    # `memory` needs `knowledge`: drop it too when `knowledge` is the one withheld.
    return tuple(capability for capability in remaining if capability != "memory" or "knowledge" in remaining)


@pytest.mark.parametrize("route", ROUTES, ids=str)
def test_a_key_with_just_the_needed_capabilities_passes(tenant, target_key, route):
    """R-2.7; these routes name no index, so an empty policy does not matter."""
    capabilities = route.capabilities + (("knowledge",) if "memory" in route.capabilities else ())
    client, _ = tenant.key_client(capabilities=capabilities, read=(), write=())

    response = route.call(client, tenant=tenant, target_key=target_key)

    assert response.status_code == route.success


@pytest.mark.parametrize("route", CAPABILITY_ROUTES, ids=str)
def test_a_key_without_the_capability_is_a_403_and_writes_nothing(tenant, target_key, state, route):
    """R-2.7."""
    client, _ = tenant.key_client(capabilities=without(route.capabilities))
    before = state()

    response = route.call(client, tenant=tenant, target_key=target_key)

    assert response.status_code == 403
    assert response.json()["error"]["type"] == "permission_error"
    assert state() == before


@pytest.mark.parametrize("route", ORGANISATION_ROUTES, ids=str)
def test_another_organisations_key_is_a_404_and_writes_nothing(tenant, other_tenant, target_key, state, route):
    """R-2.5."""
    before = state()

    response = route.call(other_tenant.client(), tenant=tenant, target_key=target_key)

    assert response.status_code == 404
    assert state() == before


@pytest.mark.parametrize("route", ROUTES, ids=str)
def test_no_credential_is_a_401_and_writes_nothing(tenant, anonymous, target_key, state, route):
    """R-2.1."""
    before = state()

    response = route.call(anonymous, tenant=tenant, target_key=target_key)

    assert response.status_code == 401
    assert response.json()["error"]["type"] == "authentication_error"
    assert state() == before


@pytest.mark.parametrize("route", [route for route in ROUTES if "persons" in route.path], ids=str)
def test_another_organisations_key_never_touches_this_organisations_person(tenant, other_tenant, target_key, route):
    """R-12.1: a subject names a person within the caller's organisation only."""
    tenant.client().patch("/v1/persons/anna", {"helper_model_may_read": False}, format="json")

    route.call(other_tenant.client(), tenant=tenant, target_key=target_key)

    assert Person.objects.get(organisation=tenant.organisation, subject="anna").helper_model_may_read is False
