"""Bad input is a clear 4xx naming the field, never a 500 and never a partial write (R-12.3).

PostgreSQL cannot store a NUL character in text or JSON, so a NUL anywhere a request
can carry one is refused at the edge, before anything is claimed or written.
"""
from __future__ import annotations

import json

import pytest

from audit.models import AuditEvent
from core_memory.agents.models import Agent
from core_memory.threads.models import Response
from core_memory.threads.models import Item, Thread
from stores.models import KnowledgeIndex

pytestmark = pytest.mark.django_db


def error_of(response) -> tuple[int, str | None]:
    return response.status_code, response.json()["error"]["param"]


def raw(client, method: str, path: str, body) -> object:
    return client.generic(method, path, json.dumps(body), content_type="application/json")


# Raw JSON: a test client would not encode a lone surrogate or an infinity itself.
@pytest.mark.parametrize(
    ("method", "path", "body", "param"),
    [
        ("POST", "/v1/tenants/{org}/keys", '{"name": "k", "memory": {"injection": {"index_id": "{idx}", "metadata": {"klant": "a\\u0000"}}}}', "memory.injection.metadata.klant"),
        ("POST", "/v1/tenants/{org}/keys", '{"name": "k", "memory": {"injection": {"index_id": "{idx}", "metadata": {"\\u0000": "a"}}}}', "memory.injection.metadata"),
        ("POST", "/v1/tenants/{org}/keys", '{"name": "k", "memory": {"injection": {"index_id": "{idx}", "metadata": {"klant": "\\ud800"}}}}', "memory.injection.metadata.klant"),
        ("POST", "/v1/tenants/{org}/keys", '{"name": "k", "memory": {"injection": {"index_id": "{idx}", "metadata": {"score": 1e999}}}}', "memory.injection.metadata.score"),
        ("PATCH", "/v1/memory/stores/{idx}", '{"maintenance": {"enabled": false}, "promotion": {"labels": {"a\\u0000": "b"}}}', "promotion.labels"),
        ("POST", "/v1/memory", '{"index_id": "{idx}", "type": "fact", "text": "t", "metadata": {"tags": ["x", "\\u0000"]}}', "metadata.tags[1]"),
    ],
)
def test_an_unstorable_value_anywhere_in_a_body_is_a_400_naming_its_path_and_writes_nothing(tenant, method, path, body, param):
    """R-12.3, R-2.3: `param` is the path of the value (or of the object whose field name holds it)."""
    tenant.organisation.capabilities = ["improvements"]
    tenant.organisation.save()
    events = AuditEvent.objects.count()

    response = tenant.client().generic(
        method,
        path.format(org=tenant.organisation.id, idx=tenant.index.id),
        body.replace("{idx}", tenant.index.id),
        content_type="application/json",
    )

    assert error_of(response) == (400, param)
    assert AuditEvent.objects.count() == events


@pytest.mark.parametrize(
    ("method", "path", "param"),
    [
        ("GET", "/v1/indexes/idx%00", "index_id"),
        ("DELETE", "/v1/indexes/idx%00", "index_id"),
        ("PATCH", "/v1/persons/an%00na", "subject"),
        ("DELETE", "/v1/persons/an%00na", "subject"),
        ("GET", "/v1/tenants/{org}/keys/key%00", "key_id"),
        ("GET", "/v1/indexes?name=%00", "name"),
    ],
)
def test_a_null_character_in_the_path_or_the_query_is_a_400_naming_it(tenant, method, path, param):
    """R-12.3."""
    events = AuditEvent.objects.count()

    response = raw(tenant.client(), method, path.format(org=tenant.organisation.id), {})

    assert error_of(response) == (400, param)
    assert AuditEvent.objects.count() == events


def test_a_null_character_in_the_person_header_is_a_400_on_the_header(tenant):
    """R-12.3, R-2.2."""
    response = tenant.client(subject="an\u0000na").get(f"/v1/memory?index_id={tenant.index.id}")

    assert error_of(response) == (400, "X-Core-Subject")


def test_a_null_character_in_the_idempotency_key_is_a_400_on_the_header(tenant):
    """R-12.3, R-2.6."""
    response = tenant.client().post("/v1/indexes", {"name": "x"}, format="json", HTTP_IDEMPOTENCY_KEY="a\u0000b")

    assert error_of(response) == (400, "Idempotency-Key")
    assert not KnowledgeIndex.objects.filter(name="x").exists()


# The turn, thread and agent routes: raw JSON, as a careless caller sends a NUL, a lone
# surrogate or an infinity.
def written(organisation) -> tuple[int, int, int, int]:
    return (
        Thread.objects.filter(organisation=organisation).count(),
        Item.objects.filter(thread__organisation=organisation).count(),
        Response.objects.filter(organisation=organisation).count(),
        Agent.objects.filter(organisation=organisation).count(),
    )


@pytest.mark.parametrize(
    ("path", "body", "param"),
    [
        ("/v1/responses", '{"model": "fake-chat", "input": "a\\u0000b"}', "input"),
        ("/v1/responses", '{"model": "fake-chat", "input": [{"role": "user", "content": "\\ud800"}]}', "input[0].content"),
        ("/v1/responses", '{"model": "fake-chat", "input": [{"role": "user", "content": [{"type": "input_text", "text": "\\u0000"}]}]}', "input[0].content[0].text"),
        ("/v1/threads", '{"metadata": {"kanaal": "\\u0000"}}', "metadata.kanaal"),
        ("/v1/threads", '{"metadata": {"score": 1e999}}', "metadata.score"),
        ("/v1/threads/{thread}/items", '{"items": [{"role": "user", "content": {"tekst": ["\\ud800"]}}]}', "items[0].content.tekst[0]"),
        ("/v1/threads/{thread}/items", '{"items": [{"role": "user", "content": "goed"}, {"role": "user", "content": "\\u0000"}]}', "items[1].content"),
        ("/v1/agents", '{"name": "desk", "model": "fake-chat", "instructions": "\\u0000"}', "instructions"),
        # Nested deeper than the JSON encoder follows when storing it.
        ("/v1/threads", '{"metadata": {"a": ' + "[" * 900 + "]" * 900 + "}}", "metadata.a" + "[0]" * 32),
        ("/v1/threads/{thread}/items", '{"items": [{"role": "user", "content": ' + "[" * 900 + "]" * 900 + "}]}", "items[0].content" + "[0]" * 33),
    ],
)
def test_an_unstorable_value_is_a_400_naming_it_and_nothing_is_written(tenant, fake_model, path, body, param):
    """R-12.3, R-2.3."""
    client = tenant.client()
    thread = Thread.objects.create(organisation=tenant.organisation, key=tenant.key)
    before = written(tenant.organisation)

    response = client.generic("POST", path.format(thread=thread.id), body, content_type="application/json")

    assert (response.status_code, response.json()["error"]["param"]) == (400, param)
    assert written(tenant.organisation) == before
    assert fake_model.requests == []
