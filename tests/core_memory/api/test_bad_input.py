"""Bad input is a clear 4xx naming the field, never a 500 and never a partial write (R-12.3).

PostgreSQL cannot store a NUL character in text or JSON, so a NUL anywhere a request
can carry one is refused at the edge, before anything is claimed or written.
"""
from __future__ import annotations

import json

import pytest

from audit.models import AuditEvent
from core_memory.api.models import IdempotentRequest
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


def test_a_token_limit_beyond_what_can_be_stored_is_a_400_and_changes_nothing(tenant):
    """R-12.3, R-3.1: a huge number is bad input, not a 500."""
    response = tenant.client().patch(
        f"/v1/tenants/{tenant.organisation.id}", {"name": "Renamed", "monthly_token_limit": 10**30}, format="json"
    )

    assert error_of(response) == (400, "monthly_token_limit")
    tenant.organisation.refresh_from_db()
    assert tenant.organisation.monthly_token_limit is None
    assert tenant.organisation.name != "Renamed"


def test_a_null_character_in_the_idempotency_key_is_a_400_on_the_header(tenant):
    """R-12.3, R-2.6."""
    response = tenant.client().post("/v1/indexes", {"name": "x"}, format="json", HTTP_IDEMPOTENCY_KEY="a\u0000b")

    assert error_of(response) == (400, "Idempotency-Key")
    assert not KnowledgeIndex.objects.filter(name="x").exists()


def test_an_idempotent_request_with_a_long_query_string_is_kept_and_replayed(tenant):
    """R-2.6: the retry of any mutating request replays, however long its address."""
    path = "/v1/indexes?" + "note=" + "x" * 600
    first = tenant.client().post(path, {"name": "long"}, format="json", HTTP_IDEMPOTENCY_KEY="long-1")
    again = tenant.client().post(path, {"name": "long"}, format="json", HTTP_IDEMPOTENCY_KEY="long-1")

    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert KnowledgeIndex.objects.filter(name="long").count() == 1


def test_a_request_that_fails_unexpectedly_releases_its_idempotency_key(tenant, monkeypatch):
    """R-2.6: a failed answer is not kept, so the corrected retry runs instead of a 409 for a day."""
    from stores import apis

    def broken(**kwargs):
        raise RuntimeError("boom")

    client = tenant.client()
    client.raise_request_exception = False
    monkeypatch.setattr(apis, "index_create", broken)
    assert client.post("/v1/indexes", {"name": "retried"}, format="json", HTTP_IDEMPOTENCY_KEY="retry-1").status_code == 500
    monkeypatch.undo()

    retry = client.post("/v1/indexes", {"name": "retried"}, format="json", HTTP_IDEMPOTENCY_KEY="retry-1")

    assert retry.status_code == 201
    assert IdempotentRequest.objects.filter(idempotency_key="retry-1", state="completed").count() == 1


def test_a_body_nested_beyond_what_the_json_decoder_can_read_is_a_400(tenant):
    """R-12.3: not a RecursionError's 500, and not a claimed Idempotency-Key either."""
    body = '{"name": %s"x"%s}' % ("[" * 5000, "]" * 5000)

    response = tenant.client().generic(
        "POST", "/v1/indexes", body, content_type="application/json", HTTP_IDEMPOTENCY_KEY="deep"
    )

    assert error_of(response) == (400, None)
    assert not IdempotentRequest.objects.exists()


def test_the_check_of_a_deeply_nested_body_needs_no_recursion():
    """R-12.3: what the decoder could read, the check can walk, whatever the stack."""
    from core_memory.base.storable import unstorable_value

    deep: object = "\u0000"
    for _ in range(5000):
        deep = [deep]

    assert unstorable_value({"metadata": deep}) == ("metadata" + "[0]" * 5000, "Text may not contain NUL characters or lone surrogates.")


# Valid ISO 8601 with an offset, but outside the years Python can read back in every zone.
UNREADABLE_TIMES = ["9999-12-31T23:00:00-14:00", "0001-01-01T00:00:00+14:00", "9999-12-31T12:00:00Z"]


@pytest.mark.parametrize("expires_at", UNREADABLE_TIMES)
def test_a_key_expiry_outside_the_readable_years_is_a_400_and_no_key_is_made(tenant, expires_at):
    """R-12.3: such a key was stored, its answer was a 400, and every later key list a 500."""
    url = f"/v1/tenants/{tenant.organisation.id}/keys"

    response = tenant.client().post(url, {"name": "far", "expires_at": expires_at}, format="json")

    assert error_of(response) == (400, "expires_at")
    assert not tenant.organisation.keys.filter(name="far").exists()
    assert tenant.client().get(url).status_code == 200


@pytest.mark.parametrize("after", UNREADABLE_TIMES)
def test_an_audit_bound_outside_the_readable_years_is_a_400(tenant, after):
    """R-12.3, R-11.3."""
    response = tenant.client().get("/v1/audit", {"after": after})

    assert error_of(response) == (400, "after")


@pytest.mark.parametrize(
    ("metadata", "path"),
    [({"klant": "a\u0000"}, "klant"), ({"a\u0000": "x"}, None), ({"score": float("inf")}, "score")],
)
def test_the_key_configuration_refuses_an_unstorable_metadata_filter_whatever_the_interface(tenant, metadata, path):
    """R-12.3: the console validates a key's memory configuration through the same
    serializer as the API, but without the API's parser in front of it."""
    from rest_framework.exceptions import ValidationError

    from core_memory.base.validation import first_error
    from core_memory.keys.configuration import memory_config_normalise

    with pytest.raises(ValidationError) as refused:
        memory_config_normalise({"injection": {"index_id": tenant.index.id, "metadata": metadata}})

    assert first_error(refused.value.detail)[0] == ".".join(part for part in ("injection", "metadata", path) if part)


def test_the_store_sections_refuse_an_unstorable_label_name_whatever_the_interface():
    """R-12.3: the console's store form validates through store_sections_normalise."""
    from rest_framework.exceptions import ValidationError

    from core_memory.base.validation import first_error
    from stores.configuration import store_sections_normalise

    with pytest.raises(ValidationError) as refused:
        store_sections_normalise({"promotion": {"labels": {"a\u0000": "b"}}})

    assert first_error(refused.value.detail)[0] == "promotion.labels"


def test_a_body_900_levels_deep_is_read_however_deep_the_callers_stack():
    """R-12.3: how deep a body Python's decoder reads must not depend on how the process
    was started (`python -m pytest` in `make test` sits a few frames deeper than `pytest`)."""
    import io

    from core_memory.api.parsers import CoreJSONParser

    body = ("[" * 900 + "]" * 900).encode()

    def parse_at(depth: int):
        if depth:
            return parse_at(depth - 1)
        return CoreJSONParser().parse(io.BytesIO(body), parser_context={})

    data = parse_at(300)
    for _ in range(899):
        data = data[0]
    assert data == []
