"""The console (R-10.3, R-10.4): organisation-scoped admin pages, written through the services."""
from __future__ import annotations

import json
import re

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management import call_command
from django.test import Client

from audit.models import AuditEvent
from audit.services import audit_event_record
from core_memory.console.services import CONSOLE_APP_LABELS, console_administrator_create
from core_memory.keys.models import ApiKey, KeyTrailEntry, secret_hash
from stores.models import KnowledgeIndex, MemoryStore, default_promotion

pytestmark = pytest.mark.django_db

PASSWORD = "a long enough password"


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def console_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def administrator(tenant):
    """A console administrator of `tenant`'s organisation, made as `createadmin` makes one."""
    return console_administrator_create(organisation=tenant.organisation, username="anna", password=PASSWORD).user


@pytest.fixture
def console(administrator) -> Client:
    return console_client(administrator)


@pytest.fixture
def superuser(db):
    return get_user_model().objects.create_superuser(username="root", password=PASSWORD)


def audit_event_of(tenant, target: str):
    return audit_event_record(organisation=tenant.organisation, actor="test", action="key.updated", target=target)


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
    user = get_user_model().objects.create_user(username="loose", password=PASSWORD, is_staff=True)
    user.user_permissions.set(Permission.objects.filter(content_type__app_label__in=CONSOLE_APP_LABELS))

    response = console_client(user).get("/console/keys/apikey/")

    assert response.status_code == 403


def test_a_superuser_sees_every_organisation(superuser, tenant, other_tenant):
    page = console_client(superuser).get("/console/keys/apikey/").content.decode()

    assert tenant.key.id in page
    assert other_tenant.key.id in page


def test_createadmin_binds_the_user_and_grants_the_console_permissions(tenant):
    """R-1.3."""
    call_command("createadmin", org=tenant.organisation.id, username="bert", password=PASSWORD)

    user = get_user_model().objects.get(username="bert")
    assert user.is_staff and not user.is_superuser
    assert user.console_administrator.organisation_id == tenant.organisation.id
    assert user.has_perm("keys.change_apikey")
    assert user.has_perm("stores.change_memorystore")
    assert user.has_perm("audit.view_auditevent")


# --- the audit log is read-only ---------------------------------------------------------------


@pytest.mark.parametrize("who", ["administrator", "superuser"])
def test_the_audit_log_has_no_add_change_or_delete_even_for_a_superuser(request, tenant, who):
    """R-11.1: nothing in the application can change or remove an event."""
    client = console_client(request.getfixturevalue(who))
    event = audit_event_of(tenant, "key_x")
    events_before = AuditEvent.objects.count()

    assert client.get("/console/audit/auditevent/add/").status_code == 403
    assert client.post(f"/console/audit/auditevent/{event.id}/change/", {"target": "key_y"}).status_code == 403
    assert client.post(f"/console/audit/auditevent/{event.id}/delete/", {"post": "yes"}).status_code == 403
    changelist = client.post(
        "/console/audit/auditevent/", {"action": "delete_selected", "_selected_action": [event.id], "post": "yes"}
    )
    assert changelist.status_code in (200, 302)
    assert AuditEvent.objects.count() == events_before
    assert AuditEvent.objects.get(pk=event.pk).target == "key_x"
    page = client.get(f"/console/audit/auditevent/{event.id}/change/")
    assert page.status_code == 200
    assert 'name="_save"' not in page.content.decode()


# --- keys ------------------------------------------------------------------------------------------


def key_form(**overrides) -> dict:
    form = {
        "name": "support desk",
        "capabilities": ["knowledge", "memory"],
        "policy_read": ["*"],
        "policy_write": [],
        "memory": "{}",
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
    assert key.memory["injection"]["limit"] == 20
    assert AuditEvent.objects.filter(action="key.created", target=key.id, actor="console:anna").exists()
    again = console.get(f"/console/keys/apikey/{key.id}/change/").content.decode()
    assert secrets[0] not in again


def test_a_key_with_memory_but_not_knowledge_is_refused_on_capabilities(console, tenant):
    """R-3.2."""
    keys_before = ApiKey.objects.count()

    response = console.post("/console/keys/apikey/add/", key_form(capabilities=["memory"]))

    assert response.status_code == 200
    assert "capabilities" in response.context["adminform"].form.errors
    assert ApiKey.objects.count() == keys_before


def test_an_invalid_memory_configuration_is_refused_naming_the_field(console, tenant):
    response = console.post(
        f"/console/keys/apikey/{tenant.key.id}/change/",
        key_form(memory='{"injection": {"enabled": true, "index_id": "%s", "limit": -1}}' % tenant.index.id),
    )

    assert response.status_code == 200
    assert "injection.limit" in str(response.context["adminform"].form.errors["memory"])
    assert ApiKey.objects.get(pk=tenant.key.pk).name == "owner"


def test_changing_a_key_goes_through_the_key_service(console, tenant):
    response = console.post(
        f"/console/keys/apikey/{tenant.key.id}/change/",
        key_form(
            name="owner",
            capabilities=["knowledge", "memory", "threads", "management", "trust_envelope"],
            policy_read=[tenant.index.id],
            policy_write=[tenant.index.id],
            memory='{"injection": {"enabled": true, "index_id": "%s"}}' % tenant.index.id,
        ),
    )

    assert response.status_code == 302
    key = ApiKey.objects.get(pk=tenant.key.pk)
    assert key.policy == {"read": [tenant.index.id], "write": [tenant.index.id]}
    assert key.memory["injection"] == {**key.memory["injection"], "enabled": True, "index_id": tenant.index.id, "limit": 20}
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
    assert AuditEvent.objects.filter(action="key.revoked", target=tenant.key.id, actor="console:anna").exists()
    assert KeyTrailEntry.objects.filter(key_id=tenant.key.id, event="revoked").exists()


def test_deleting_a_key_keeps_it_in_the_key_trail(console, tenant):
    """R-3.5."""
    response = console.post(f"/console/keys/apikey/{tenant.key.id}/delete/", {"post": "yes"})

    assert response.status_code == 302
    assert not ApiKey.objects.filter(pk=tenant.key.pk).exists()
    assert KeyTrailEntry.objects.filter(key_id=tenant.key.id, event="deleted").exists()
    assert AuditEvent.objects.filter(action="key.deleted", target=tenant.key.id, actor="console:anna").exists()


# --- stores ----------------------------------------------------------------------------------------


def store_form(store: MemoryStore, **sections) -> dict:
    values = {name: getattr(store, name) for name in ("injection", "lessons", "promotion", "maintenance")}
    values.update(sections)
    return {name: json.dumps(value) for name, value in values.items()}


def test_a_store_section_saved_in_the_console_replaces_it_whole_and_is_audited(console, tenant):
    """R-4.3, R-10.3."""
    store = MemoryStore.objects.get(index=tenant.index)

    response = console.post(
        f"/console/stores/memorystore/{tenant.index.id}/change/", store_form(store, injection={"rank": "blend"})
    )

    assert response.status_code == 302
    store.refresh_from_db()
    assert store.injection == {
        "token_budget": None,
        "organisation_share": 0.4,
        "rank": "blend",
        "episodes_limit": 0,
        "commitments": {"inject_limit": 5},
    }
    event = AuditEvent.objects.get(action="store.updated", target=tenant.index.id)
    assert (event.actor, event.details) == ("console:anna", {"sections": ["injection"]})


def test_an_invalid_store_section_is_a_form_error_naming_the_field(console, tenant):
    store = MemoryStore.objects.get(index=tenant.index)

    response = console.post(
        f"/console/stores/memorystore/{tenant.index.id}/change/",
        store_form(store, injection={"rank": "newest"}, lessons={"enabled": True}),
    )

    assert response.status_code == 200
    assert "rank" in str(response.context["adminform"].form.errors["injection"])
    store.refresh_from_db()
    assert store.lessons == {"enabled": False, "min_episodes": 3}
    assert not AuditEvent.objects.filter(action="store.updated").exists()


def test_promotion_in_the_console_needs_the_organisations_improvements(console, tenant):
    """R-4.3: a console administrator may set promotion only when the organisation has `improvements`."""
    store = MemoryStore.objects.get(index=tenant.index)
    url = f"/console/stores/memorystore/{tenant.index.id}/change/"
    wanted = {"enabled": True, "labels": {"audience": "everyone"}}

    refused = console.post(url, store_form(store, promotion=wanted, lessons={"enabled": True}))

    assert refused.status_code == 200
    assert "promotion" in refused.context["adminform"].form.errors
    store.refresh_from_db()
    assert (store.promotion, store.lessons["enabled"]) == (default_promotion(), False)

    tenant.organisation.capabilities = ["improvements"]
    tenant.organisation.save()
    accepted = console.post(url, store_form(store, promotion=wanted))

    assert accepted.status_code == 302
    store.refresh_from_db()
    assert store.promotion == wanted


def test_an_index_made_in_the_console_belongs_to_her_organisation_and_has_a_store(console, tenant):
    response = console.post("/console/stores/knowledgeindex/add/", {"name": "klanten"})

    assert response.status_code == 302
    index = KnowledgeIndex.objects.get(name="klanten")
    assert index.organisation_id == tenant.organisation.id
    assert MemoryStore.objects.filter(index=index).exists()
    assert AuditEvent.objects.filter(action="index.created", target=index.id, actor="console:anna").exists()


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


def test_a_superuser_adds_a_key_for_the_organisation_she_chooses(superuser, tenant):
    response = console_client(superuser).post(
        "/console/keys/apikey/add/", key_form(organisation=tenant.organisation.id, policy_read=[tenant.index.id])
    )

    assert response.status_code == 302
    key = ApiKey.objects.get(name="support desk")
    assert (key.organisation_id, key.policy["read"]) == (tenant.organisation.id, [tenant.index.id])
    assert AuditEvent.objects.filter(action="key.created", target=key.id, actor="console:root").exists()


def test_deleting_an_index_in_the_console_marks_it_deleted(console, tenant):
    """R-4.1: the index and all it holds are unavailable at once; the store row stays."""
    page = console.get(f"/console/stores/knowledgeindex/{tenant.index.id}/delete/")
    assert page.status_code == 200

    response = console.post(f"/console/stores/knowledgeindex/{tenant.index.id}/delete/", {"post": "yes"})

    assert response.status_code == 302
    assert KnowledgeIndex.objects.get(pk=tenant.index.pk).deleted_at is not None
    assert AuditEvent.objects.filter(action="index.deleted", target=tenant.index.id, actor="console:anna").exists()
    assert console.get(f"/console/stores/memorystore/{tenant.index.id}/change/").status_code == 404
    assert tenant.client().get(f"/v1/memory/stores/{tenant.index.id}").status_code == 404


def test_a_revoked_key_is_shown_read_only_in_the_console(console, tenant):
    """R-3.2: revocation is final; the console shows the revoked key but does not change it."""
    console.post("/console/keys/apikey/", {"action": "revoke_keys", "_selected_action": [tenant.key.id]})

    page = console.get(f"/console/keys/apikey/{tenant.key.id}/change/")
    attempt = console.post(f"/console/keys/apikey/{tenant.key.id}/change/", {"name": "revived"})

    assert page.status_code == 200
    assert b'name="name"' not in page.content
    assert attempt.status_code == 403
    assert ApiKey.objects.get(pk=tenant.key.pk).name == tenant.key.name
