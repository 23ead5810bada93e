"""The console's key pages (core_memory.keys.admin, R-3.2, R-10.3): written through the key services."""
from __future__ import annotations

import re

import pytest

from audit.models import AuditEvent
from core_memory.keys.models import ApiKey, KeyTrailEntry, secret_hash
from tests.core_memory.conftest import INJECTION_BLOCK_DEFAULTS, KEY_MEMORY_DEFAULTS
from tests.factories import console_client

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_password_hashing")]


def key_form(**overrides) -> dict:
    form = {
        "name": "support desk",
        "capabilities": ["knowledge", "memory"],
        "policy_read": ["*"],
        "policy_write": [],
        "memory__retrieval_tool": "on",  # a checkbox left unticked is off; the search tool is on by default
        "expires_at_0": "",
        "expires_at_1": "",
    }
    form.update(overrides)
    return form


def test_creating_a_key_shows_its_secret_once_and_audits_it(console, tenant):
    """R-3.2, R-10.3, R-11.2."""
    response = console.post("/console/keys/apikey/add/", key_form(), follow=True)

    assert response.status_code == 200
    secrets = re.findall(r"core_sk_[A-Za-z0-9_\-]+", response.content.decode())
    assert len(secrets) == 1
    key = ApiKey.objects.get(secret_hash=secret_hash(secrets[0]))
    assert (key.organisation_id, key.name, key.capabilities) == (tenant.organisation.id, "support desk", ["knowledge", "memory"])
    assert key.policy == {"read": ["*"], "write": []}
    assert key.memory == KEY_MEMORY_DEFAULTS
    assert AuditEvent.objects.filter(action="key.created", target=key.id, actor="console:anna").count() == 1
    again = console.get(f"/console/keys/apikey/{key.id}/change/").content.decode()
    assert secrets[0] not in again


def test_a_key_with_memory_but_not_knowledge_is_refused_on_capabilities(console, tenant):
    """R-3.2."""
    keys_before = ApiKey.objects.count()

    response = console.post("/console/keys/apikey/add/", key_form(capabilities=["memory"]))

    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {"capabilities": ["De capability 'memory' vraagt 'knowledge'."]}
    assert ApiKey.objects.count() == keys_before


@pytest.mark.parametrize(
    ("values", "errors"),
    [
        (
            {"memory__injection__enabled": "on", "memory__injection__index_id": "IDX", "memory__injection__limit": "-1"},
            {"memory__injection__limit": ["Zorg ervoor dat deze waarde minstens 0 is."]},
        ),
        (
            {"memory__injection__enabled": "on"},
            {"memory__injection__index_id": ["Een ingeschakeld injectieblok noemt zijn index."]},
        ),
        (
            {"memory__decay__half_life_days__other_types": '{"Invoice": 3}'},
            {"memory__decay__half_life_days__other_types": ["Een type is in kleine letters: [a-z][a-z0-9_]{0,39}."]},
        ),
    ],
)
def test_an_invalid_memory_configuration_is_refused_naming_the_field(console, tenant, values, errors):
    """R-3.2: the API's validation, each error on its own setting."""
    values = {name: value.replace("IDX", tenant.index.id) for name, value in values.items()}
    response = console.post(f"/console/keys/apikey/{tenant.key.id}/change/", key_form(name="renamed", **values))

    assert response.status_code == 200
    assert response.context["adminform"].form.errors == errors
    assert ApiKey.objects.get(pk=tenant.key.pk).name == "owner"


def test_the_memory_configuration_is_a_form_of_settings_with_their_defaults_shown(console, tenant):
    """Issue 13 item 4: one field per setting, its help and its default; the index picked from hers."""
    form = console.get(f"/console/keys/apikey/{tenant.key.id}/change/").context["adminform"].form

    limit = form.fields["memory__injection__limit"]
    assert (limit.min_value, limit.max_value, str(limit.help_text)) == (
        0, 500, "Het grootste aantal records over de persoon en gedeelde records samen. Standaard: 20."
    )
    assert [value for value, _label in form.fields["memory__injection__index_id"].choices] == ["", tenant.index.id]
    assert form.initial["memory__retrieval_tool"] is True
    assert form.initial["memory__decay__half_life_days__preference"] is None


def test_changing_a_key_goes_through_the_key_service(console, tenant):
    response = console.post(
        f"/console/keys/apikey/{tenant.key.id}/change/",
        key_form(
            name="owner",
            capabilities=["knowledge", "memory", "threads", "management", "trust_envelope"],
            policy_read=[tenant.index.id],
            policy_write=[tenant.index.id],
            memory__injection__enabled="on",
            memory__injection__index_id=tenant.index.id,
            memory__injection__types="fact, preference",
            memory__injection__metadata='{"team": "support"}',
            memory__decay__half_life_days__preference="90",
            memory__decay__half_life_days__other_types='{"invoice": 30}',
        ),
    )

    assert response.status_code == 302
    key = ApiKey.objects.get(pk=tenant.key.pk)
    assert key.policy == {"read": [tenant.index.id], "write": [tenant.index.id]}
    assert key.memory["injection"] == {
        **INJECTION_BLOCK_DEFAULTS, "enabled": True, "index_id": tenant.index.id, "types": ["fact", "preference"],
        "metadata": {"team": "support"},
    }
    assert key.memory["decay"] == {"half_life_days": {"preference": 90.0, "invoice": 30.0}}
    assert key.memory["retrieval_tool"] is True
    event = AuditEvent.objects.get(action="key.updated", target=key.id)
    assert event.details == {"fields": ["policy", "memory"]}


def test_the_policy_offers_only_the_administrators_own_indexes(console, tenant, other_tenant):
    page = console.get(f"/console/keys/apikey/{tenant.key.id}/change/").content.decode()

    assert tenant.index.id in page
    assert other_tenant.index.id not in page


def test_revoking_keys_is_an_action_that_audits(console, tenant):
    """R-3.2, R-11.2."""
    response = console.post(
        "/console/keys/apikey/", {"action": "revoke_keys", "_selected_action": [tenant.key.id]}
    )

    assert response.status_code == 302
    assert ApiKey.objects.get(pk=tenant.key.pk).revoked_at is not None
    assert AuditEvent.objects.filter(action="key.revoked", target=tenant.key.id, actor="console:anna").count() == 1
    assert KeyTrailEntry.objects.filter(key_id=tenant.key.id, event="revoked").count() == 1


def test_deleting_a_key_keeps_it_in_the_key_trail(console, tenant):
    """R-3.5."""
    response = console.post(f"/console/keys/apikey/{tenant.key.id}/delete/", {"post": "yes"})

    assert response.status_code == 302
    assert not ApiKey.objects.filter(pk=tenant.key.pk).exists()
    assert KeyTrailEntry.objects.filter(key_id=tenant.key.id, event="deleted").count() == 1
    assert AuditEvent.objects.filter(action="key.deleted", target=tenant.key.id, actor="console:anna").count() == 1


def test_a_superuser_adds_a_key_for_the_organisation_she_chooses(superuser, tenant):
    response = console_client(superuser).post(
        "/console/keys/apikey/add/", key_form(organisation=tenant.organisation.id, policy_read=[tenant.index.id])
    )

    assert response.status_code == 302
    key = ApiKey.objects.get(name="support desk")
    assert (key.organisation_id, key.policy["read"]) == (tenant.organisation.id, [tenant.index.id])
    assert AuditEvent.objects.filter(action="key.created", target=key.id, actor="console:root").count() == 1


def test_a_revoked_key_is_shown_read_only_in_the_console(console, tenant):
    """R-3.2: revocation is final; the console shows the revoked key but does not change it."""
    console.post("/console/keys/apikey/", {"action": "revoke_keys", "_selected_action": [tenant.key.id]})

    page = console.get(f"/console/keys/apikey/{tenant.key.id}/change/")
    attempt = console.post(f"/console/keys/apikey/{tenant.key.id}/change/", {"name": "revived"})

    assert page.status_code == 200
    assert b'name="name"' not in page.content
    assert attempt.status_code == 403
    assert ApiKey.objects.get(pk=tenant.key.pk).name == tenant.key.name
