"""The console's organisation page (core_memory.organisations.admin): the rate limit (issue 20) and
every setting of its own the API changes — time zone, helper model, token limit, retention,
improvements (issue 32) — edited through the organisation service after a page that shows what
changes, audited; its name, capabilities and offered models shown only."""
from __future__ import annotations

import pytest

from audit.models import AuditEvent
from core_memory.organisations.models import Organisation

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_password_hashing")]


def page(tenant) -> str:
    return f"/console/organisations/organisation/{tenant.organisation.id}/change/"


def form_of(tenant, *, confirmed: bool = True, **changes) -> dict:
    """The page's form as it stands, with `changes`, confirmed or not."""
    organisation = Organisation.objects.get(pk=tenant.organisation.pk)
    data = {
        "timezone": organisation.timezone,
        "helper_model": organisation.helper_model or "",
        "monthly_token_limit": "" if organisation.monthly_token_limit is None else str(organisation.monthly_token_limit),
        "audit_retention_days": str(organisation.audit_retention_days),
        "rate_limit_per_minute": "" if organisation.rate_limit_per_minute is None else str(organisation.rate_limit_per_minute),
        **({"improvements_enabled": "on"} if organisation.improvements.get("enabled") else {}),
        **({"confirmed": "1"} if confirmed else {}),
    }
    data.update(changes)
    return {name: value for name, value in data.items() if value is not None}


def test_the_list_shows_the_servers_limit_when_the_organisation_sets_none(console, tenant, settings):
    settings.CORE_RATE_LIMIT_PER_MINUTE = 6000

    listing = console.get("/console/organisations/organisation/").content.decode()

    assert "6000 (de limiet van de server)" in listing


def test_an_administrator_sets_the_rate_limit_and_it_is_audited(console, tenant):
    response = console.post(page(tenant), form_of(tenant, rate_limit_per_minute="12000"))

    assert response.status_code == 302
    assert Organisation.objects.get(pk=tenant.organisation.pk).rate_limit_per_minute == 12000
    event = AuditEvent.objects.get(action="organisation.updated", target=tenant.organisation.id)
    assert (event.actor, event.details) == ("console:anna", {"fields": ["rate_limit_per_minute"]})
    assert "12000" in console.get("/console/organisations/organisation/").content.decode()


def test_emptying_the_rate_limit_gives_the_key_the_servers_again(console, tenant):
    Organisation.objects.filter(pk=tenant.organisation.pk).update(rate_limit_per_minute=50)

    response = console.post(page(tenant), form_of(tenant, rate_limit_per_minute=""))

    assert response.status_code == 302
    assert Organisation.objects.get(pk=tenant.organisation.pk).rate_limit_per_minute is None


@pytest.mark.parametrize("value", ["0", "1000001", "veel"])
def test_a_rate_limit_out_of_bounds_is_refused_on_its_field_and_nothing_changes(console, tenant, value):
    response = console.post(page(tenant), form_of(tenant, rate_limit_per_minute=value))

    assert response.status_code == 200
    assert list(response.context["adminform"].form.errors) == ["rate_limit_per_minute"]
    assert Organisation.objects.get(pk=tenant.organisation.pk).rate_limit_per_minute is None
    assert not AuditEvent.objects.filter(action="organisation.updated").exists()


def test_the_operators_settings_are_shown_not_changed(console, tenant):
    """The name, capabilities and offered models are the operator's: posted, they are ignored."""
    console.post(page(tenant), form_of(tenant, rate_limit_per_minute="900", name="taken over", capabilities='["improvements"]'))

    organisation = Organisation.objects.get(pk=tenant.organisation.pk)
    assert (organisation.rate_limit_per_minute, organisation.name, organisation.capabilities) == (900, tenant.organisation.name, tenant.organisation.capabilities)


def test_every_own_setting_is_changed_only_after_the_page_that_shows_what_changes(console, tenant):
    """Issue 32: time zone, helper model, token limit, retention and improvements were read-only."""
    wanted = form_of(
        tenant, confirmed=False, timezone="Asia/Tokyo", helper_model="helper", monthly_token_limit="500000",
        audit_retention_days="30", improvements_enabled="on",
    )
    before = Organisation.objects.get(pk=tenant.organisation.pk)

    shown = console.post(page(tenant), wanted)

    assert shown.status_code == 200
    assert ("tijdzone", before.timezone, "Asia/Tokyo") in [(str(label), now, then) for label, now, then in shown.context["changes"]]
    assert ("verbeteringen", "uit", "aan") in [(str(label), now, then) for label, now, then in shown.context["changes"]]
    assert Organisation.objects.get(pk=tenant.organisation.pk).timezone == before.timezone
    assert not AuditEvent.objects.filter(action="organisation.updated").exists()

    confirmed = console.post(page(tenant), {**wanted, "confirmed": "1"})

    assert confirmed.status_code == 302
    organisation = Organisation.objects.get(pk=tenant.organisation.pk)
    assert (organisation.timezone, organisation.helper_model, organisation.monthly_token_limit, organisation.audit_retention_days) == (
        "Asia/Tokyo", "helper", 500000, 30,
    )
    assert organisation.improvements["enabled"] is True
    event = AuditEvent.objects.get(action="organisation.updated")
    assert sorted(event.details["fields"]) == ["audit_retention_days", "helper_model", "improvements", "monthly_token_limit", "timezone"]


@pytest.mark.parametrize(("field", "value"), [("timezone", "Mars/Olympus"), ("audit_retention_days", "0"), ("monthly_token_limit", "-1"), ("helper_model", "not-offered")])
def test_a_setting_the_api_refuses_is_refused_on_its_field_and_nothing_changes(console, tenant, field, value):
    response = console.post(page(tenant), form_of(tenant, **{field: value}))

    assert response.status_code == 200
    assert list(response.context["adminform"].form.errors) == [field]
    assert not AuditEvent.objects.filter(action="organisation.updated").exists()


def test_another_organisations_limit_cannot_be_changed(console, other_tenant):
    response = console.post(page(other_tenant), form_of(other_tenant, rate_limit_per_minute="5"))

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
