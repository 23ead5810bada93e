"""The API document tells the truth (R-1.5, R-2, issue 14): it is valid OpenAPI, every
operation says in words what it does, documents its errors and headers, and real answers —
success and error alike — match what it documents."""
from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from django.contrib.staticfiles import finders
from openapi_core import OpenAPI
from openapi_core.contrib.django import DjangoOpenAPIRequest, DjangoOpenAPIResponse
from openapi_spec_validator import validate

from memory.models import MemoryRecord

pytestmark = pytest.mark.django_db

MUTATING = {"post", "put", "patch", "delete"}


@pytest.fixture(scope="module")
def document(django_db_blocker) -> dict:
    from rest_framework.test import APIClient

    with django_db_blocker.unblock():
        response = APIClient().get("/v1/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    return response.json()


def _operations(document: dict):
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            yield path, method, operation


def test_the_document_is_valid_openapi(document):
    """R-1.5."""
    validate(document)
    assert document["openapi"].startswith("3.")
    assert document["components"]["securitySchemes"]["bearer"] == {
        "type": "http",
        "scheme": "bearer",
        "description": "`Authorization: Bearer <secret>` with a key secret `core_sk_…` or a subject token "
        "`core_st_…` (which acts as its key, for one person).",
    }


def test_every_operation_says_in_words_what_it_does(document):
    """Issue 14: summaries and descriptions in words, not requirement numbers."""
    for path, method, operation in _operations(document):
        assert operation.get("summary"), f"{method.upper()} {path} has no summary"
        assert len(operation.get("description", "")) > 20, f"{method.upper()} {path} has no description"
        assert not re.search(r"\bR-\d", operation["summary"] + operation["description"]), f"{method.upper()} {path}"
        assert operation["security"] == [{"bearer": []}]


def test_every_operation_documents_its_error_answers_with_the_error_body(document):
    """R-2.3: every operation can answer 400, 401 and 403 (and 404 when the path names an
    object, 409 and 422 when it changes something), each with the R-2.3 body."""
    schemas = document["components"]["schemas"]

    def is_error_body(schema: dict) -> bool:
        body = schemas[schema["$ref"].rsplit("/", 1)[1]]
        detail = schemas[body["properties"]["error"]["$ref"].rsplit("/", 1)[1]]
        return body["required"] == ["error"] and {"type", "message", "param"} <= set(detail["required"])

    for path, method, operation in _operations(document):
        expected = {"400", "401", "403"}
        if "{" in path:
            expected.add("404")
        if method in MUTATING:
            # The OpenAI-compatible surface answers 400 where Core answers 422 (the SDKs know no 422).
            expected |= {"409"} if path.startswith("/openai/v1/") else {"409", "422"}
        responses = operation["responses"]
        assert expected <= set(responses), f"{method.upper()} {path}: {sorted(responses)}"
        for code in expected:
            assert is_error_body(responses[code]["content"]["application/json"]["schema"]), f"{method.upper()} {path} {code}"
            assert responses[code]["description"]
        assert any(code.startswith("2") for code in responses), f"{method.upper()} {path}"
        for code, response in responses.items():
            if code.startswith("2") and code != "204":
                assert response.get("content"), f"{method.upper()} {path} {code} has no body schema"
    detail = document["components"]["schemas"]["ErrorDetail"]
    assert set(detail["required"]) == {"type", "message", "param"}
    assert detail["properties"]["param"]["nullable"] is True
    openai_detail = document["components"]["schemas"]["OpenAIErrorDetail"]
    assert set(openai_detail["required"]) == {"type", "message", "param", "code"}
    for path, method, operation in _operations(document):
        if path.startswith("/openai/v1/"):
            assert "422" not in operation["responses"], f"{method.upper()} {path}"
            reference = operation["responses"]["400"]["content"]["application/json"]["schema"]["$ref"]
            assert reference == "#/components/schemas/OpenAIError", f"{method.upper()} {path}"


def test_every_operation_documents_the_person_and_idempotency_headers(document):
    """R-2.2, R-2.6."""
    for path, method, operation in _operations(document):
        headers = {parameter["name"] for parameter in operation["parameters"] if parameter["in"] == "header"}
        assert "X-Core-Subject" in headers, f"{method.upper()} {path}"
        assert ("Idempotency-Key" in headers) == (method in MUTATING), f"{method.upper()} {path}"


def test_lists_document_their_pagination_and_filters(document):
    """R-2.4, R-5.6, R-11.3."""
    pages = document["components"]["schemas"]
    paginated = set()
    for path, method, operation in _operations(document):
        reference = operation["responses"].get("200", {}).get("content", {}).get("application/json", {}).get("schema", {}).get("$ref", "")
        if method == "get" and reference.startswith("#/components/schemas/Paginated"):
            assert pages[reference.rsplit("/", 1)[1]]["required"] == ["data", "next_cursor"]
            paginated.add(path)
    assert paginated == {
        "/v1/memory", "/v1/memory/{record_id}/history", "/v1/indexes", "/v1/agents", "/v1/audit",
        "/v1/tenants/{organisation_id}/keys", "/v1/threads/{thread_id}/items", "/v1/memory/proposals",
        "/v1/webhooks", "/v1/webhooks/{webhook_id}/deliveries",
    }
    for path in paginated:
        names = {parameter["name"] for parameter in document["paths"][path]["get"]["parameters"]}
        assert {"limit", "cursor"} <= names, path
    memory_list = {parameter["name"]: parameter for parameter in document["paths"]["/v1/memory"]["get"]["parameters"]}
    assert {"index_id", "type", "subject", "min_confidence", "after", "before", "contested", "status", "q"} <= set(memory_list)
    assert memory_list["index_id"]["required"] is True
    assert memory_list["type"]["schema"]["type"] == "array"
    assert "metadata.<key>=<value>" in document["paths"]["/v1/memory"]["get"]["description"]
    audit = {parameter["name"] for parameter in document["paths"]["/v1/audit"]["get"]["parameters"]}
    assert {"action", "after", "before"} <= audit


def test_writes_document_their_real_status_codes_and_bodies(document):
    """R-5.5: a write answers 201 (created, corrected) or 200 (confirmed) with the write answer;
    creating routes answer 201."""
    write = document["paths"]["/v1/memory"]["post"]["responses"]
    assert write["201"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/WriteAnswer"}
    assert write["200"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/WriteAnswer"}
    assert set(document["components"]["schemas"]["WriteAnswer"]["properties"]) == {
        "memory_id", "status", "type", "text", "confidence", "subject", "index_id", "created_at"
    }
    for path in ("/v1/indexes", "/v1/threads", "/v1/agents", "/v1/subject-tokens", "/v1/tenants/{organisation_id}/keys"):
        assert "201" in document["paths"][path]["post"]["responses"], path
        assert "200" not in document["paths"][path]["post"]["responses"], path
    assert set(document["paths"]["/v1/responses"]["post"]["responses"]["200"]["content"]) == {
        "application/json", "text/event-stream"
    }


class _Request(DjangoOpenAPIRequest):
    """The answer is checked, not the request: a body the view has already read is not read again."""

    @property
    def body(self):
        return b""


@pytest.fixture
def check(document):
    """check(response, status) -> body: asserts the status and that the answer matches the document."""
    openapi = OpenAPI.from_dict(document)

    def _check(response, status: int):
        assert response.status_code == status, response.content
        openapi.validate_response(_Request(response.wsgi_request), DjangoOpenAPIResponse(response))
        return response.json() if response.content else None

    return _check


def test_real_answers_match_the_document(tenant, other_tenant, anonymous, check, fake_model, settings):
    """Issue 14: a walk through every route, its success answers and its errors, each answer
    validated against the document (status code, content type, body)."""
    owner = tenant.client()
    anna = tenant.client(subject="anna")
    organisation_id = tenant.organisation.id

    # Organisation, keys, subject tokens, models.
    check(owner.get(f"/v1/tenants/{organisation_id}"), 200)
    check(owner.patch(f"/v1/tenants/{organisation_id}", {"name": "Acme"}, format="json"), 200)
    created = check(owner.post(f"/v1/tenants/{organisation_id}/keys", {"name": "reader", "capabilities": ["knowledge", "memory"],
                                                                      "policy": {"read": ["*"], "write": []}}, format="json"), 201)
    check(owner.get(f"/v1/tenants/{organisation_id}/keys"), 200)
    check(owner.get(f"/v1/tenants/{organisation_id}/keys/{created['id']}"), 200)
    check(owner.patch(f"/v1/tenants/{organisation_id}/keys/{created['id']}", {"name": "lezer"}, format="json"), 200)
    check(owner.post("/v1/subject-tokens", {"subject": "anna"}, format="json"), 201)
    check(owner.get("/v1/models"), 200)
    check(owner.get("/v1/embedding-models"), 200)
    check(owner.get("/v1/rerank-models"), 200)

    # Indexes, stores, records.
    index = check(owner.post("/v1/indexes", {"name": "klanten"}, format="json"), 201)
    check(owner.get("/v1/indexes"), 200)
    check(owner.get(f"/v1/indexes/{index['id']}"), 200)
    check(owner.get(f"/v1/memory/stores/{index['id']}"), 200)
    check(owner.patch(f"/v1/memory/stores/{index['id']}", {"maintenance": {"enabled": False}}, format="json"), 200)
    switch = check(owner.put(f"/v1/memory/stores/{index['id']}/extraction", {"enabled": True, "model": "fake-chat"}, format="json"), 200)
    check(owner.get(f"/v1/memory/stores/{index['id']}/extraction"), 200)
    assert check(owner.get(f"/v1/memory/stores/{index['id']}"), 200)["extraction"] == switch
    check(owner.get(f"/v1/connectors/{switch['connector_id']}"), 200)
    check(owner.delete(f"/v1/connectors/{switch['connector_id']}"), 204)
    check(owner.put(f"/v1/memory/stores/{index['id']}/extraction", {"enabled": True, "model": "absent"}, format="json"), 422)
    first = check(anna.post("/v1/memory", {"index_id": index["id"], "type": "preference", "text": "Wil facturen per e-mail."}, format="json"), 201)
    assert first["status"] == "created"
    assert check(anna.post("/v1/memory", {"index_id": index["id"], "type": "preference", "text": "wil facturen per e-mail"}, format="json"), 200)["status"] == "confirmed"
    corrected = check(anna.post("/v1/memory", {"index_id": index["id"], "type": "preference", "text": "Wil facturen per post.",
                                               "replaces": first["memory_id"]}, format="json"), 201)
    assert corrected["status"] == "corrected"
    check(anna.get("/v1/memory", {"index_id": index["id"], "type": ["preference"], "limit": 1}), 200)
    check(anna.post("/v1/memory/search", {"index_id": index["id"], "query": "facturen"}, format="json"), 200)
    check(anna.get(f"/v1/memory/{corrected['memory_id']}"), 200)
    check(anna.patch(f"/v1/memory/{corrected['memory_id']}", {"confidence": 0.8}, format="json"), 200)
    check(anna.get(f"/v1/memory/{corrected['memory_id']}/history"), 200)
    check(anna.delete(f"/v1/memory/{corrected['memory_id']}"), 204)
    check(owner.get("/v1/tools", {"source": "memory"}), 200)
    lines = '{"type": "fact", "text": "Acme betaalt per maand.", "subject": "anna"}\n'
    check(owner.post(f"/v1/memory/import?index_id={index['id']}&dry_run=true", data=lines, content_type="application/x-ndjson"), 200)
    check(owner.post(f"/v1/memory/import?index_id={index['id']}", data='{"type": "episode"}\n', content_type="application/x-ndjson"), 400)
    check(owner.get("/v1/persons/anna/export"), 200)

    # Threads, agents, a turn.
    thread = check(anna.post("/v1/threads", {"metadata": {"kanaal": "chat"}}, format="json"), 201)
    check(anna.get(f"/v1/threads/{thread['id']}"), 200)
    check(anna.post(f"/v1/threads/{thread['id']}/items", {"items": [{"role": "user", "content": "Hallo"}]}, format="json"), 201)
    check(anna.get(f"/v1/threads/{thread['id']}/items"), 200)
    agent = check(owner.post("/v1/agents", {"name": "helpdesk", "model": "fake-chat"}, format="json"), 201)
    check(owner.get("/v1/agents"), 200)
    check(owner.get(f"/v1/agents/{agent['id']}"), 200)
    check(owner.post(f"/v1/agents/{agent['id']}/versions", {"model": "fake-chat", "instructions": "Kort."}, format="json"), 201)
    fake_model.reply("Goedemorgen!")
    check(anna.post("/v1/responses", {"model": "fake-chat", "input": "Hoi", "thread_id": thread["id"]}, format="json"), 200)
    check(owner.delete(f"/v1/agents/{agent['id']}"), 204)

    # Persons, audit, revocation, deletion.
    check(owner.patch("/v1/persons/anna", {"helper_model_may_read": False}, format="json"), 200)
    check(owner.get("/v1/audit", {"action": "memory.updated"}), 200)
    check(owner.delete(f"/v1/tenants/{organisation_id}/keys/{created['id']}"), 200)
    check(owner.delete("/v1/persons/anna"), 200)
    check(owner.delete(f"/v1/indexes/{index['id']}"), 204)

    # Errors: each status with the body, as documented.
    check(owner.post("/v1/memory", {"index_id": tenant.index.id, "type": "fact"}, format="json"), 400)
    check(anonymous.get("/v1/indexes"), 401)
    reader, _ = tenant.key_client(capabilities=["knowledge"])
    check(reader.get("/v1/memory", {"index_id": tenant.index.id}), 403)
    check(owner.get(f"/v1/indexes/{other_tenant.index.id}"), 404)
    check(owner.get(f"/v1/memory/mem_{'0' * 26}"), 404)
    check(owner.post("/v1/memory", {"index_id": tenant.index.id, "type": "episode", "text": "x"}, format="json"), 422)
    check(owner.post("/v1/indexes", {"name": "a"}, format="json", HTTP_IDEMPOTENCY_KEY="k1"), 201)
    check(owner.post("/v1/indexes", {"name": "b"}, format="json", HTTP_IDEMPOTENCY_KEY="k1"), 422)
    check(owner.post("/v1/indexes", "name=a", content_type="application/x-www-form-urlencoded"), 415)
    assert MemoryRecord.objects.filter(organisation=tenant.organisation, status="active").count() == 0


class _Assets(HTMLParser):
    def __init__(self):
        super().__init__()
        self.addresses: list[str] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("src", "href") and value:
                self.addresses.append(value)


@pytest.mark.parametrize("page", ["/v1/docs", "/v1/redoc"])
def test_the_docs_pages_load_nothing_from_outside(anonymous, page):
    """Issue 14: Swagger UI and ReDoc come from drf-spectacular-sidecar's static files, and the
    page's Content-Security-Policy lets a browser fetch nothing from another server (ReDoc's
    bundle asks for a logo on a CDN; the policy refuses it and ReDoc hides the image)."""
    response = anonymous.get(page)

    assert response.status_code == 200
    assets = _Assets()
    assets.feed(response.content.decode())
    assert assets.addresses, "the page names its scripts"
    for address in assets.addresses:
        assert address.startswith("/static/drf_spectacular_sidecar/"), address
        assert finders.find(address.removeprefix("/static/")), address
    policy = response["Content-Security-Policy"]
    assert "default-src 'self'" in policy and "img-src 'self' data:" in policy and "connect-src 'self'" in policy
    assert "https://" not in response.content.decode()


BLANK_LOOKING = [" ", "\t", "\x1c", "\x1f", "\x85", "\u3000"]


@pytest.mark.parametrize("value", BLANK_LOOKING)
def test_a_text_the_document_calls_valid_is_never_refused_as_blank(document, tenant, value):
    """R-1.5, R-2.3: the API trims text as Python does; a client reads the document's patterns as
    ECMA-262 (JSON Schema's dialect, jsonschema_rs) or Python (jsonschema). The fuzz step found
    "\\x1f", valid by `\\S` in ECMA and blank to the API. In either dialect, what the document allows
    the API takes."""
    import jsonschema
    import jsonschema_rs

    name = document["components"]["schemas"]["IndexListCreateInputRequest"]["properties"]["name"]
    action = next(p for p in document["paths"]["/v1/audit"]["get"]["parameters"] if p["name"] == "action")["schema"]
    client = tenant.client()

    created = client.post("/v1/indexes", {"name": value}, format="json")
    listed = client.get("/v1/audit", {"action": value})

    for schema, answer in ((name, created), (action, listed)):
        allowed = jsonschema_rs.is_valid(schema, value) or jsonschema.Draft202012Validator(schema).is_valid(value)
        assert answer.status_code != 400 if allowed else answer.status_code == 400, (value, schema, answer.content)


@pytest.mark.parametrize("value", BLANK_LOOKING)
def test_a_tool_items_call_id_the_document_calls_valid_is_never_refused_as_blank(document, tenant, value):
    """R-1.5, R-2.3: the fuzz step sent a tool result whose call_id was a newline; the item's
    variant in the document allowed it and the API, trimming it, refused it as missing."""
    import jsonschema_rs

    body = document["paths"]["/v1/threads/{thread_id}/items"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    variants = {**body, "components": document["components"]}  # its $ref resolves in the document
    item = {"kind": "tool_result", "role": "tool", "call_id": value, "content": "ok"}
    thread = tenant.client(subject="anna").post("/v1/threads", {}, format="json").json()["id"]

    answer = tenant.client(subject="anna").post(f"/v1/threads/{thread}/items", {"items": [item]}, format="json")

    allowed = jsonschema_rs.is_valid(variants, {"items": [item]})
    assert answer.status_code != 400 if allowed else answer.status_code == 400, (value, answer.content)


@pytest.mark.parametrize("value", BLANK_LOOKING)
def test_a_person_a_subject_token_is_minted_for_the_document_calls_valid_is_never_refused_as_blank(document, tenant, value):
    """R-2.2, R-2.3: the fuzz step minted a subject token for "\\x85"; the body's person had no rule
    in the document, and the API refused it as no person at all."""
    import jsonschema_rs

    body = document["paths"]["/v1/subject-tokens"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    schema = {**body, "components": document["components"]}  # its $ref resolves in the document

    answer = tenant.client().post("/v1/subject-tokens", {"subject": value}, format="json")

    allowed = jsonschema_rs.is_valid(schema, {"subject": value})
    assert answer.status_code != 400 if allowed else answer.status_code == 400, (value, answer.content)


@pytest.mark.parametrize("value", BLANK_LOOKING)
def test_a_person_in_the_path_the_document_calls_valid_is_never_refused_as_blank(document, tenant, value):
    """R-2.2, R-2.3: the fuzz step sent `GET /v1/persons/%09/export`; the path's person had no
    rule in the document, and the API refused the tab as no person at all."""
    import jsonschema_rs
    from urllib.parse import quote

    schema = next(p for p in document["paths"]["/v1/persons/{subject}/export"]["get"]["parameters"] if p["name"] == "subject")["schema"]

    answer = tenant.client().get(f"/v1/persons/{quote(value)}/export")

    allowed = jsonschema_rs.is_valid(schema, value)
    assert answer.status_code != 400 if allowed else answer.status_code == 400, (value, schema, answer.content)
