"""The console's index and store pages (stores.admin, R-4.1, R-4.3, R-10.3): written through the store services."""
from __future__ import annotations

import json

import pytest

from audit.models import AuditEvent
from stores.models import KnowledgeIndex, MemoryStore, default_promotion

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_password_hashing")]


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
    assert response.context["adminform"].form.errors == {"injection": ['rank: "newest" is een ongeldige keuze.']}
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
    assert refused.context["adminform"].form.errors == {"promotion": ["The organisation lacks the capability 'improvements'."]}
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
    assert AuditEvent.objects.filter(action="index.created", target=index.id, actor="console:anna").count() == 1


def test_deleting_an_index_in_the_console_marks_it_deleted(console, tenant):
    """R-4.1: the index and all it holds are unavailable at once; the store row stays."""
    page = console.get(f"/console/stores/knowledgeindex/{tenant.index.id}/delete/")
    assert page.status_code == 200

    response = console.post(f"/console/stores/knowledgeindex/{tenant.index.id}/delete/", {"post": "yes"})

    assert response.status_code == 302
    assert KnowledgeIndex.objects.get(pk=tenant.index.pk).deleted_at is not None
    assert AuditEvent.objects.filter(action="index.deleted", target=tenant.index.id, actor="console:anna").count() == 1
    assert console.get(f"/console/stores/memorystore/{tenant.index.id}/change/").status_code == 404
    assert tenant.client().get(f"/v1/memory/stores/{tenant.index.id}").status_code == 404
