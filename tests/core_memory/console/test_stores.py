"""The console's index and store pages (core_memory.console.stores, R-4.1, R-4.3, R-10.3): written through the store services."""
from __future__ import annotations

import json

import pytest

from audit.models import AuditEvent
from core_memory.console.stores import SECTION_SETTINGS
from memory.embedding.services import record_embeddings_refresh
from stores.models import KnowledgeIndex, MemoryStore, default_promotion
from tests.factories import make_index, make_record

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_password_hashing")]


def store_form(store: MemoryStore, **changes) -> dict:
    """The store's page as the browser posts it: every setting as stored, then `changes` (form names)."""
    form = {}
    for name, value in stored_settings(store).items():
        if isinstance(value, bool):
            if value:
                form[name] = "on"
        elif isinstance(value, dict):
            form[name] = json.dumps(value)
        elif value is not None:
            form[name] = str(value)
    form.update(changes)
    return form


def stored_settings(store: MemoryStore) -> dict:
    """Every section's settings as form values."""
    values = {}
    for name, settings in SECTION_SETTINGS.items():
        values.update(settings.initial(getattr(store, name)))
    return values


def test_a_store_section_saved_in_the_console_replaces_it_whole_and_is_audited(console, tenant):
    """R-4.3, R-10.3: only the section whose settings changed is sent, whole."""
    store = MemoryStore.objects.get(index=tenant.index)

    response = console.post(f"/console/stores/memorystore/{tenant.index.id}/change/", store_form(store, injection__rank="blend"))

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


def test_a_setting_left_empty_returns_to_its_default(console, tenant):
    """R-4.3: a field left out of a section sent returns to its default."""
    store = MemoryStore.objects.get(index=tenant.index)
    store.injection = {**store.injection, "episodes_limit": 4, "token_budget": 900}
    store.save()

    console.post(
        f"/console/stores/memorystore/{tenant.index.id}/change/",
        store_form(store, injection__episodes_limit="", injection__token_budget=""),
    )

    store.refresh_from_db()
    assert (store.injection["episodes_limit"], store.injection["token_budget"]) == (0, None)


@pytest.mark.parametrize(
    ("values", "errors"),
    [
        ({"injection__rank": "newest"}, {"injection__rank": ["Selecteer een geldige keuze. newest is geen beschikbare keuze."]}),
        ({"injection__organisation_share": "0.5"}, {"injection__organisation_share": ["Zorg ervoor dat deze waarde hoogstens 0.4 is."]}),
        ({"promotion__labels": "[1]"}, {"promotion__labels": ['Verwachtte een dictionary van items, maar kreeg type "list".']}),
    ],
)
def test_an_invalid_store_setting_is_a_form_error_naming_it(console, tenant, values, errors):
    store = MemoryStore.objects.get(index=tenant.index)

    response = console.post(
        f"/console/stores/memorystore/{tenant.index.id}/change/", store_form(store, lessons__enabled="on", **values)
    )

    assert response.status_code == 200
    assert response.context["adminform"].form.errors == errors
    store.refresh_from_db()
    assert store.lessons == {"enabled": False, "min_episodes": 3}
    assert not AuditEvent.objects.filter(action="store.updated").exists()


def test_the_store_page_shows_each_setting_with_its_help_and_default_under_the_index_name(console, tenant):
    """Issue 13 item 4."""
    response = console.get(f"/console/stores/memorystore/{tenant.index.id}/change/")

    form = response.context["adminform"].form
    assert str(form.fields["injection__episodes_limit"].help_text) == (
        "Hoeveel episodes een beurt krijgt in de sectie eerdere sessies; 0: geen. Standaard: 0."
    )
    assert form.initial["lessons__min_episodes"] == 3
    assert response.context["original"].__str__() == f"memory ({tenant.index.id})"
    assert "het heeft nog niet gedraaid · in de wachtrij: 0" in response.content.decode()  # its maintenance, lately
    listing = console.get("/console/stores/memorystore/").content.decode()
    assert '<th class="field-index_name"><a href="' in listing


def test_promotion_in_the_console_needs_the_organisations_improvements(console, tenant):
    """R-4.3: a console administrator may set promotion only when the organisation has `improvements`."""
    store = MemoryStore.objects.get(index=tenant.index)
    url = f"/console/stores/memorystore/{tenant.index.id}/change/"
    wanted = {"promotion__enabled": "on", "promotion__labels": '{"audience": "everyone"}'}

    refused = console.post(url, store_form(store, lessons__enabled="on", **wanted))

    assert refused.status_code == 200
    assert refused.context["adminform"].form.errors == {"promotion__enabled": ["De organisatie mist de capability 'improvements'."]}
    store.refresh_from_db()
    assert (store.promotion, store.lessons["enabled"]) == (default_promotion(), False)

    tenant.organisation.capabilities = ["improvements"]
    tenant.organisation.save()
    accepted = console.post(url, store_form(store, **wanted))

    assert accepted.status_code == 302
    store.refresh_from_db()
    assert store.promotion == {"enabled": True, "labels": {"audience": "everyone"}}


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


def test_an_index_page_shows_its_embedding_and_rerank_model_in_dutch_and_english(console, tenant, fake_embedding, fake_rerank):
    """Issue 27 item 4: the console's index page shows the embedding and rerank model."""
    response = console.post(
        "/console/stores/knowledgeindex/add/", {"name": "eigen", "embedding_model": "ext-embed", "rerank_model": "ext-rerank", "rerank_depth": "30"}
    )
    assert response.status_code == 302
    index = KnowledgeIndex.objects.get(name="eigen")
    assert (index.embedding_model, index.rerank_model, index.rerank_depth) == ("ext-embed", "ext-rerank", 30)

    english = console.get(f"/console/stores/knowledgeindex/{index.id}/change/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    dutch = console.get(f"/console/stores/knowledgeindex/{index.id}/change/", HTTP_ACCEPT_LANGUAGE="nl").content.decode()

    assert "Embedding model" in english and "Rerank model" in english and "ext-embed" in english and "ext-rerank" in english
    assert "Embeddingmodel" in dutch and "Herrangschikkingsmodel" in dutch and "ext-embed" in dutch


def test_a_model_not_offered_is_refused_on_the_console_form_naming_the_field(console, tenant):
    response = console.post("/console/stores/knowledgeindex/add/", {"name": "eigen", "embedding_model": "nope"})

    assert response.status_code == 200
    assert "nope" in response.content.decode() and not KnowledgeIndex.objects.filter(name="eigen").exists()


def test_an_index_page_shows_how_far_its_switch_to_another_embedding_model_is_in_dutch_and_english(console, tenant, fake_embedding):
    """Issue 27 item 2: a switch's progress in the console, the model it goes to and its records embedded of all."""
    index = make_index(tenant.organisation, name="wissel", embeddings=True)
    records = [make_record(index, text, subject="anna") for text in ("Heeft twee katten.", "Speelt viool.", "Werkt bij een bank.")]
    KnowledgeIndex.objects.unscoped().filter(pk=index.pk).update(embedding_model_next="ext-embed")
    record_embeddings_refresh(record_ids=[records[0].id], model_ids=["ext-embed"])

    english = console.get(f"/console/stores/knowledgeindex/{index.id}/change/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    dutch = console.get(f"/console/stores/knowledgeindex/{index.id}/change/", HTTP_ACCEPT_LANGUAGE="nl").content.decode()

    assert "Switching to" in english and "ext-embed: 1 of 3 records embedded" in english
    assert "Wisselt naar" in dutch and "ext-embed: 1 van 3 records ingebed" in dutch


def test_an_index_page_not_switching_shows_no_progress(console, tenant):
    english = console.get(f"/console/stores/knowledgeindex/{tenant.index.id}/change/", HTTP_ACCEPT_LANGUAGE="en").content.decode()

    assert "records embedded" not in english
