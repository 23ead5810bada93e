import pytest

from audit.models import AuditEvent
from core_memory.organisations.models import Organisation

pytestmark = pytest.mark.django_db


def tenant_url(tenant) -> str:
    return f"/v1/tenants/{tenant.organisation.id}"


def test_tenant_shows_its_settings_with_all_configured_models_offered_by_default(tenant):
    """R-3.1, R-3.6: `offered_models` defaults to every model of CORE_MODELS."""
    response = tenant.client().get(tenant_url(tenant))

    assert response.status_code == 200
    body = response.json()
    assert body["id"] == tenant.organisation.id
    assert body["timezone"] == "Europe/Amsterdam"
    assert body["capabilities"] == []
    assert body["offered_models"] == ["jouw-chatmodel", "helper"]
    assert body["helper_model"] is None
    assert body["monthly_token_limit"] is None
    assert body["audit_retention_days"] == 365
    assert body["improvements"] == {"enabled": False}


def test_patch_changes_the_given_settings_and_is_audited(tenant):
    """R-3.1, R-11.2."""
    changes = {
        "name": "Nieuw",
        "timezone": "America/New_York",
        "capabilities": ["improvements"],
        "offered_models": ["helper"],
        "helper_model": "helper",
        "monthly_token_limit": 0,
        "audit_retention_days": 30,
        "improvements": {"enabled": True},
    }

    response = tenant.client().patch(tenant_url(tenant), changes, format="json")

    assert response.status_code == 200
    assert {name: response.json()[name] for name in changes} == changes
    organisation = Organisation.objects.get(pk=tenant.organisation.pk)
    assert organisation.offered_models == ["helper"]
    assert organisation.improvements == {"enabled": True}
    event = AuditEvent.objects.get(action="organisation.updated", target=organisation.id)
    assert event.actor == tenant.key.id
    assert event.details == {"fields": list(changes)}


def test_nulls_reset_offered_models_and_the_token_limit(tenant):
    """R-3.1: null offers every model and means no token limit."""
    tenant.client().patch(tenant_url(tenant), {"offered_models": ["helper"], "monthly_token_limit": 10}, format="json")

    response = tenant.client().patch(tenant_url(tenant), {"offered_models": None, "monthly_token_limit": None}, format="json")

    assert response.status_code == 200
    assert response.json()["offered_models"] == ["jouw-chatmodel", "helper"]
    assert response.json()["monthly_token_limit"] is None


@pytest.mark.parametrize(
    ("changes", "status", "param"),
    [
        ({"timezone": "Mars/Olympus"}, 400, "timezone"),
        ({"capabilities": ["improvements", "flying"]}, 400, "capabilities[1]"),
        ({"offered_models": ["helper", "gpt-unknown"]}, 422, "offered_models[1]"),
        ({"helper_model": "gpt-unknown"}, 422, "helper_model"),
        ({"offered_models": ["jouw-chatmodel"], "helper_model": "helper"}, 422, "helper_model"),
        ({"monthly_token_limit": -1}, 400, "monthly_token_limit"),
        ({"audit_retention_days": 0}, 400, "audit_retention_days"),
        ({"improvements": {}}, 400, "improvements.enabled"),
        ({"improvements": {"enabled": True, "extra": 1}}, 400, "improvements.extra"),
        ({"name": ""}, 400, "name"),
        ({"colour": "blue"}, 400, "colour"),
    ],
)
def test_bad_settings_are_refused_naming_the_field_and_nothing_changes(tenant, state, changes, status, param):
    """R-3.1, R-2.3, R-12.3."""
    before = state()

    response = tenant.client().patch(tenant_url(tenant), changes, format="json")

    assert response.status_code == status
    assert response.json()["error"]["param"] == param
    assert state() == before


def test_withdrawing_the_offered_helper_model_is_a_422_on_offered_models(tenant):
    """R-3.1: the helper model must stay offered."""
    tenant.client().patch(tenant_url(tenant), {"helper_model": "helper"}, format="json")

    response = tenant.client().patch(tenant_url(tenant), {"offered_models": ["jouw-chatmodel"]}, format="json")

    assert response.status_code == 422
    assert response.json()["error"]["param"] == "offered_models"


def test_a_helper_model_the_operator_withdrew_since_does_not_block_an_unrelated_change(tenant, settings):
    """R-3.1: like a key's policy (docs/decisions.md), only what the PATCH gives is checked."""
    tenant.client().patch(tenant_url(tenant), {"helper_model": "helper"}, format="json")
    settings.CORE_MODELS = [model for model in settings.CORE_MODELS if model["id"] != "helper"]

    response = tenant.client().patch(tenant_url(tenant), {"name": "Renamed"}, format="json")

    assert response.status_code == 200
    assert response.json()["name"] == "Renamed"


def test_another_organisation_is_a_404_and_unchanged(tenant, other_tenant):
    """R-2.5."""
    url = tenant_url(other_tenant)

    assert tenant.client().get(url).status_code == 404
    assert tenant.client().patch(url, {"name": "taken over"}, format="json").status_code == 404
    assert Organisation.objects.get(pk=other_tenant.organisation.pk).name == other_tenant.organisation.name


def test_a_token_limit_beyond_what_can_be_stored_is_a_400_and_changes_nothing(tenant):
    """R-12.3, R-3.1: a huge number is bad input, not a 500."""
    response = tenant.client().patch(
        f"/v1/tenants/{tenant.organisation.id}", {"name": "Renamed", "monthly_token_limit": 10**30}, format="json"
    )

    assert (response.status_code, response.json()["error"]["param"]) == (400, "monthly_token_limit")
    tenant.organisation.refresh_from_db()
    assert tenant.organisation.monthly_token_limit is None
    assert tenant.organisation.name != "Renamed"
