"""Bad input is a clear 4xx naming the field, never a 500 and never a partial write (R-12.3).

PostgreSQL cannot store a NUL character in text or JSON, so a NUL anywhere a request
can carry one is refused at the edge, before anything is claimed or written.
"""
from __future__ import annotations

import json

import pytest

from audit.models import AuditEvent
from core_memory.agents.models import Agent
from core_memory.webhooks.models import WebhookSubscription
from core_memory.threads.models import Item, Response, Thread
from memory.models import MemoryRecord
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


# --- Found by probing from outside (issue 11): each was a 500 or a silent misreading. -------

FAR_OFFSET = "2026-01-01T00:00:00+17:47"
FAR_OFFSET_QUERY = FAR_OFFSET.replace("+", "%2B")


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/v1/memory", {"index_id": "{idx}", "type": "commitment", "text": "Bel Anna", "due_at": FAR_OFFSET}),
        ("PATCH", "/v1/memory/{record}", {"due_at": FAR_OFFSET}),
        ("GET", "/v1/memory?index_id={idx}&after=" + FAR_OFFSET_QUERY, None),
        ("GET", "/v1/memory?index_id={idx}&before=" + FAR_OFFSET_QUERY, None),
        ("POST", "/v1/memory/search", {"index_id": "{idx}", "query": "Anna", "after": FAR_OFFSET, "before": FAR_OFFSET}),
        ("GET", "/v1/audit?after=" + FAR_OFFSET_QUERY, None),
        ("GET", "/v1/audit?before=" + FAR_OFFSET_QUERY, None),
        ("POST", "/v1/tenants/{org}/keys", {"name": "k", "expires_at": "2099-01-01T00:00:00-17:47"}),
        ("PATCH", "/v1/tenants/{org}/keys/{key}", {"expires_at": "2099-01-01T00:00:00+23:59"}),
        ("POST", "/v1/threads/{thread}/items", {"items": [{"role": "user", "content": "x", "created_at": FAR_OFFSET}]}),
        ("POST", "/v1/memory/import?index_id={idx}", '{"type": "commitment", "text": "Bel Bob", "due_at": "%s"}\n' % FAR_OFFSET),
    ],
)
def test_a_time_offset_beyond_what_postgresql_takes_is_read_as_its_instant_on_every_time_field(tenant, write, method, path, body):
    """R-12.3, R-2.4: `…+17:47` was a 500 on every time field and filter."""
    record = write("Bel Anna", type="commitment")
    thread = Thread.objects.create(organisation=tenant.organisation, key=tenant.key)
    _client, other_key = tenant.key_client()
    names = {"idx": tenant.index.id, "record": record.id, "org": tenant.organisation.id, "key": other_key.id, "thread": thread.id}
    url = path.format(**names)
    data = json.loads(json.dumps(body).replace("{idx}", tenant.index.id)) if body is not None else None

    if isinstance(body, str):  # the import's JSON Lines
        response = tenant.client().generic(method, url, body, content_type="application/x-ndjson")
    else:
        response = tenant.client().generic(method, url, json.dumps(data) if data is not None else "", content_type="application/json")

    assert response.status_code in (200, 201), response.content


def _cursor(position: str) -> str:
    from base64 import b64encode
    from urllib.parse import urlencode

    return b64encode(urlencode({"p": position}).encode()).decode()


LIST_ROUTES = [
    "/v1/indexes",
    "/v1/audit",
    "/v1/agents",
    "/v1/tenants/{org}/keys",
    "/v1/memory?index_id={idx}",
    "/v1/memory/{record}/history",
    "/v1/threads/{thread}/items",
    "/v1/memory/proposals",
    "/v1/tools",
    "/v1/models",
    "/v1/embedding-models",
    "/v1/rerank-models",
    "/v1/webhooks",
    "/v1/webhooks/{webhook}/deliveries",
]
# Lists whose position is a place in the list, not an id: any position that is not one is refused.
POSITIONAL_LISTS = (
    "/v1/memory/{record}/history", "/v1/threads/{thread}/items", "/v1/tools", "/v1/models", "/v1/embedding-models", "/v1/rerank-models"
)


def test_every_list_with_a_cursor_is_in_the_forged_cursor_test():
    """A list added later, or one that starts taking a cursor, is tried with forged positions too."""
    from rest_framework.test import APIClient

    document = APIClient().get("/v1/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    with_cursor = {
        path
        for path, operations in document["paths"].items()
        for operation in operations.values()
        if any(parameter.get("name") == "cursor" for parameter in operation.get("parameters", []))
    }
    tried = {route.split("?")[0].replace("{record}", "{record_id}").replace("{thread}", "{thread_id}").replace("{org}", "{organisation_id}").replace("{webhook}", "{webhook_id}") for route in LIST_ROUTES}

    assert "/v1/memory/proposals" in with_cursor
    assert with_cursor - tried == set()


@pytest.mark.parametrize("route", LIST_ROUTES)
@pytest.mark.parametrize("position", ["\u0000", "a\u0000b", "abc", "99999999999999999999999", "-1"])
def test_a_forged_cursor_position_is_a_400_on_cursor_on_every_list(tenant, write, route, position):
    """R-12.3, R-2.4: a position holding NUL, or a number a column cannot hold, was a 500."""
    record = write("Iets")
    thread = Thread.objects.create(organisation=tenant.organisation, key=tenant.key)
    webhook = WebhookSubscription.objects.create(organisation=tenant.organisation, url="https://hooks.example/x", events=["record.created"], secret="whsec_x")
    url = route.format(org=tenant.organisation.id, idx=tenant.index.id, record=record.id, thread=thread.id, webhook=webhook.id)
    separator = "&" if "?" in url else "?"

    response = tenant.client().get(f"{url}{separator}cursor={_cursor(position)}")

    if "\u0000" not in position and route not in POSITIONAL_LISTS:
        # An id-ordered list reads any text position as "before this id": harmless, no 500.
        assert response.status_code == 200, response.content
    else:
        assert error_of(response) == (400, "cursor")


def test_a_null_character_in_a_metadata_filters_name_is_a_400_naming_the_parameter(tenant):
    """R-12.3: `metadata.a%00=1` was a 500."""
    response = tenant.client().get(f"/v1/memory?index_id={tenant.index.id}&metadata.a%00=1")

    assert error_of(response) == (400, "metadata.a\u0000")


def test_an_empty_time_filter_is_a_400_on_every_list_that_takes_one(tenant):
    """R-2.4: `GET /v1/audit?before=` ignored the empty value while `/v1/memory?after=` refused it."""
    assert error_of(tenant.client().get("/v1/audit?before=")) == (400, "before")
    assert error_of(tenant.client().get("/v1/audit?after=")) == (400, "after")
    assert error_of(tenant.client().get(f"/v1/memory?index_id={tenant.index.id}&after=")) == (400, "after")


@pytest.mark.parametrize("route", LIST_ROUTES + ["/v1/tools", "/v1/models"])
def test_an_empty_limit_is_a_400_on_limit_on_every_list(tenant, write, route):
    """R-2.4: `?limit=` was read as no limit on the paginated lists and refused on the others
    (found by the fuzzing step); an empty value is checked like any other, as for times."""
    record = write("Iets")
    thread = Thread.objects.create(organisation=tenant.organisation, key=tenant.key)
    webhook = WebhookSubscription.objects.create(organisation=tenant.organisation, url="https://hooks.example/x", events=["record.created"], secret="whsec_x")
    url = route.format(org=tenant.organisation.id, idx=tenant.index.id, record=record.id, thread=thread.id, webhook=webhook.id)
    separator = "&" if "?" in url else "?"

    assert error_of(tenant.client().get(f"{url}{separator}limit=")) == (400, "limit")


@pytest.mark.parametrize("path", ["/v1/tools", "/v1/models", "/v1/embedding-models", "/v1/rerank-models"])
@pytest.mark.parametrize("limit", ["0", "501", "ten"])
def test_the_tool_and_model_lists_check_their_limit_like_every_list(tenant, path, limit):
    """R-2.4: `/v1/tools` and `/v1/models` took any `limit`."""
    assert error_of(tenant.client().get(f"{path}?limit={limit}")) == (400, "limit")


@pytest.mark.parametrize("path", ["/v1/tools", "/v1/models"])
def test_the_tool_and_model_lists_page_by_limit_and_cursor(tenant, path, settings):
    """R-2.4: the limit is honoured and the cursor leads to the rest."""
    settings.CORE_MODELS = [{"id": f"model-{n}", "provider": "openai", "base_url": "http://x.invalid/v1", "api_key_env": None} for n in range(3)]
    first = tenant.client().get(f"{path}?limit=1").json()
    rest = tenant.client().get(f"{path}?limit=500&cursor={first['next_cursor']}").json()
    everything = tenant.client().get(path).json()

    assert len(first["data"]) == 1
    assert first["data"] + rest["data"] == everything["data"]
    assert rest["next_cursor"] is None


@pytest.mark.parametrize(
    ("path", "body", "param"),
    [
        ("/v1/memory", {"index_id": "{idx}", "type": "fact", "text": "t", "confidence": True}, "confidence"),
        ("/v1/memory", {"index_id": "{idx}", "type": "fact", "text": 12}, "text"),
        ("/v1/memory/search", {"index_id": "{idx}", "query": "q", "limit": "3"}, "limit"),
        ("/v1/responses", {"model": "fake-chat", "input": "hallo", "user": 5}, "user"),
        ("/v1/responses", {"model": "fake-chat", "input": "hallo", "stream": 0}, "stream"),
        ("/v1/threads", {"subject": 5}, "subject"),
        ("/v1/subject-tokens", {"subject": 5}, "subject"),
        ("/v1/indexes", {"name": 0}, "name"),
        ("/v1/indexes", {"name": "x", "embeddings": "false"}, "embeddings"),
    ],
)
def test_a_value_of_the_wrong_json_type_is_a_400_not_converted(tenant, fake_model, path, body, param):
    """R-12.3: `"confidence": true` was read as 1.0 and numbers became names."""
    events = AuditEvent.objects.count()
    indexes = KnowledgeIndex.objects.count()
    data = json.loads(json.dumps(body).replace("{idx}", tenant.index.id))

    response = tenant.client().post(path, data, format="json")

    assert error_of(response) == (400, param)
    assert (AuditEvent.objects.count(), KnowledgeIndex.objects.count()) == (events, indexes)
    assert written(tenant.organisation)[:3] == (0, 0, 0)


@pytest.mark.parametrize("megabytes", [3, 30])
def test_a_body_over_the_size_limit_is_a_413_with_the_json_error_body(tenant, megabytes):
    """R-2.3: a 3 MB or 30 MB body got Django's HTML 400."""
    body = json.dumps({"index_id": tenant.index.id, "type": "fact", "text": "x" * (megabytes * 1024 * 1024)})

    response = tenant.client().generic("POST", "/v1/memory", body, content_type="application/json")

    assert response.status_code == 413
    assert response["Content-Type"] == "application/json"
    assert response.json()["error"]["type"] == "invalid_request_error"
    assert not MemoryRecord.objects.exists()
