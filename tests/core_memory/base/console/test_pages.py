"""The console base (core_memory.base.console.pages, R-10.3, R-10.4): organisation-scoped admin pages,
in Dutch unless asked otherwise."""
from __future__ import annotations

import pytest

from core_memory.keys.models import ApiKey
from tests.audit.builders import audit_event_of
from tests.factories import console_client, staff_without_organisation

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_password_hashing")]


# --- scoping -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changelist", "own", "foreign"),
    [
        ("/console/keys/apikey/", lambda t: t.key.id, lambda t: t.key.id),
        ("/console/stores/knowledgeindex/", lambda t: t.index.id, lambda t: t.index.id),
        ("/console/stores/memorystore/", lambda t: t.index.id, lambda t: t.index.id),
        ("/console/audit/auditevent/", lambda t: audit_event_of(t, "target_own").target, lambda t: audit_event_of(t, "target_foreign").target),
        ("/console/organisations/organisation/", lambda t: t.organisation.id, lambda t: t.organisation.id),
    ],
)
def test_an_administrator_lists_only_her_own_organisations_objects(console, tenant, other_tenant, changelist, own, foreign):
    """R-10.3, R-12.1."""
    own_id, foreign_id = own(tenant), foreign(other_tenant)

    response = console.get(changelist)

    assert response.status_code == 200
    page = response.content.decode()
    assert own_id in page
    assert foreign_id not in page


@pytest.mark.parametrize(
    "object_url",
    [
        lambda t: f"/console/keys/apikey/{t.key.id}/change/",
        lambda t: f"/console/keys/apikey/{t.key.id}/delete/",
        lambda t: f"/console/keys/apikey/{t.key.id}/history/",
        lambda t: f"/console/stores/knowledgeindex/{t.index.id}/change/",
        lambda t: f"/console/stores/memorystore/{t.index.id}/change/",
        lambda t: f"/console/audit/auditevent/{audit_event_of(t, 'x').id}/change/",
        lambda t: f"/console/organisations/organisation/{t.organisation.id}/change/",
    ],
)
def test_another_organisations_object_page_is_a_404(console, other_tenant, object_url):
    """R-2.5: not a redirect that would admit the object exists."""
    assert console.get(object_url(other_tenant)).status_code == 404


def test_another_organisations_key_cannot_be_changed_by_posting_to_it(console, other_tenant):
    response = console.post(f"/console/keys/apikey/{other_tenant.key.id}/change/", {"name": "taken over"})

    assert response.status_code == 404
    assert ApiKey.objects.get(pk=other_tenant.key.pk).name == "owner"


def test_a_staff_user_bound_to_no_organisation_sees_nothing(tenant):
    user = staff_without_organisation(with_permissions=True)

    response = console_client(user).get("/console/keys/apikey/")

    assert response.status_code == 403


def test_a_superuser_sees_every_organisation(superuser, tenant, other_tenant):
    page = console_client(superuser).get("/console/keys/apikey/").content.decode()

    assert tenant.key.id in page
    assert other_tenant.key.id in page


# --- language (R-10.4) -------------------------------------------------------------------------------


def test_the_console_speaks_dutch_by_default(console):
    page = console.get("/console/").content.decode()

    assert "Core Geheugen" in page
    assert "Sleutels" in page
    assert "Auditlogboek" in page
    assert 'action="/i18n/setlang/"' in page


def test_the_console_speaks_english_when_asked(console):
    page = console.get("/console/", HTTP_ACCEPT_LANGUAGE="en").content.decode()

    assert "Keys" in page
    assert "Audit log" in page
    assert "Sleutels" not in page


def test_the_language_switch_keeps_english_for_the_session(console):
    switched = console.post("/i18n/setlang/", {"language": "en", "next": "/console/"})

    assert switched.status_code == 302
    assert "Keys" in console.get("/console/").content.decode()


# --- every page renders ------------------------------------------------------------------------------


@pytest.mark.parametrize("who", ["administrator", "superuser"])
@pytest.mark.parametrize(
    ("url", "status"),
    [
        ("/console/", 200),
        ("/console/keys/apikey/add/", 200),
        ("/console/stores/knowledgeindex/add/", 200),
        ("/console/stores/memorystore/add/", 403),
        ("/console/organisations/organisation/add/", 403),
        (lambda t: f"/console/keys/apikey/{t.key.id}/change/", 200),
        (lambda t: f"/console/stores/knowledgeindex/{t.index.id}/change/", 200),
        (lambda t: f"/console/stores/memorystore/{t.index.id}/change/", 200),
        (lambda t: f"/console/organisations/organisation/{t.organisation.id}/change/", 200),
    ],
)
def test_console_pages_render(request, tenant, who, url, status):
    client = console_client(request.getfixturevalue(who))

    assert client.get(url(tenant) if callable(url) else url).status_code == status
