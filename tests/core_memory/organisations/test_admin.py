"""The console's organisation page (core_memory.organisations.admin): the rate limit shown and
edited through the organisation service, audited; the other settings shown only (issue 20)."""
from __future__ import annotations

import pytest

from audit.models import AuditEvent
from core_memory.organisations.models import Organisation

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_password_hashing")]


def page(tenant) -> str:
    return f"/console/organisations/organisation/{tenant.organisation.id}/change/"


def test_the_list_shows_the_servers_limit_when_the_organisation_sets_none(console, tenant, settings):
    settings.CORE_RATE_LIMIT_PER_MINUTE = 6000

    listing = console.get("/console/organisations/organisation/").content.decode()

    assert "6000 (de limiet van de server)" in listing


def test_an_administrator_sets_the_rate_limit_and_it_is_audited(console, tenant):
    response = console.post(page(tenant), {"rate_limit_per_minute": "12000"})

    assert response.status_code == 302
    assert Organisation.objects.get(pk=tenant.organisation.pk).rate_limit_per_minute == 12000
    event = AuditEvent.objects.get(action="organisation.updated", target=tenant.organisation.id)
    assert (event.actor, event.details) == ("console:anna", {"fields": ["rate_limit_per_minute"]})
    assert "12000" in console.get("/console/organisations/organisation/").content.decode()


def test_emptying_the_rate_limit_gives_the_key_the_servers_again(console, tenant):
    Organisation.objects.filter(pk=tenant.organisation.pk).update(rate_limit_per_minute=50)

    response = console.post(page(tenant), {"rate_limit_per_minute": ""})

    assert response.status_code == 302
    assert Organisation.objects.get(pk=tenant.organisation.pk).rate_limit_per_minute is None


@pytest.mark.parametrize("value", ["0", "1000001", "veel"])
def test_a_rate_limit_out_of_bounds_is_refused_on_its_field_and_nothing_changes(console, tenant, value):
    response = console.post(page(tenant), {"rate_limit_per_minute": value})

    assert response.status_code == 200
    assert list(response.context["adminform"].form.errors) == ["rate_limit_per_minute"]
    assert Organisation.objects.get(pk=tenant.organisation.pk).rate_limit_per_minute is None
    assert not AuditEvent.objects.filter(action="organisation.updated").exists()


def test_the_page_changes_only_the_rate_limit(console, tenant):
    """The other settings are shown, not fields: a posted name is ignored."""
    console.post(page(tenant), {"rate_limit_per_minute": "900", "name": "taken over", "timezone": "Asia/Tokyo"})

    organisation = Organisation.objects.get(pk=tenant.organisation.pk)
    assert (organisation.rate_limit_per_minute, organisation.name, organisation.timezone) == (900, tenant.organisation.name, tenant.organisation.timezone)


def test_another_organisations_limit_cannot_be_changed(console, other_tenant):
    response = console.post(page(other_tenant), {"rate_limit_per_minute": "5"})

    assert response.status_code == 404
    assert Organisation.objects.get(pk=other_tenant.organisation.pk).rate_limit_per_minute is None


def test_the_page_shows_the_models_the_api_offers(console, tenant):
    """R-3.1, R-10.1: with no list of its own the organisation is offered every configured model
    (the suite's: jouw-chatmodel and helper), as `GET /v1/models` answers; the page said "-"."""
    every = console.get(page(tenant)).content.decode()
    Organisation.objects.filter(pk=tenant.organisation.pk).update(offered_models=["helper"])
    chosen = console.get(page(tenant)).content.decode()

    assert "jouw-chatmodel, helper" in every
    assert "jouw-chatmodel" not in chosen and "helper" in chosen
