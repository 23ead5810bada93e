"""`POST /v1/memory/import` and `memory.importing` (issue 14): JSON Lines of records into an
index, all or nothing, each failing line named with its field; mem0's and Zep's exports mapped."""
from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from audit.models import AuditEvent
from core_memory.base.callers import Caller
from memory.models import MemoryRecord
from tests.factories import make_key

pytestmark = pytest.mark.django_db

NDJSON = "application/x-ndjson"


def _lines(*objects) -> str:
    return "\n".join(json.dumps(obj, ensure_ascii=False) for obj in objects) + "\n"


def _import(client, index_id: str, body: str, **query):
    query_string = "&".join(f"{name}={value}" for name, value in {"index_id": index_id, **query}.items())
    return client.post(f"/v1/memory/import?{query_string}", data=body, content_type=NDJSON)


def _written() -> tuple:
    return (
        tuple(MemoryRecord.objects.order_by("id").values_list("subject", "type", "text", "confirmations")),
        tuple(AuditEvent.objects.filter(action="memory.imported").values_list("details", flat=True)),
    )


def test_core_lines_are_imported_as_writes_and_a_repeated_text_confirms(tenant):
    """A line is a write (R-5.1, R-5.4): a text she already has, also from an earlier line, is confirmed."""
    body = _lines(
        {"type": "preference", "text": "Wil facturen per e-mail.", "subject": "anna", "metadata": {"bron": "crm"}},
        {"type": "preference", "text": "wil facturen per e-mail", "subject": "anna"},
        {"type": "commitment", "text": "Belt vrijdag terug.", "due_at": "2026-12-04T09:00:00+01:00"},
        {"type": "fact", "text": "Oud adres.", "subject": "anna", "status": "deleted", "id": "mem_old", "history": []},
    )

    response = _import(tenant.client(), tenant.index.id, body)

    assert response.status_code == 200, response.content
    assert response.json() == {"dry_run": False, "lines": 4, "created": 2, "confirmed": 1, "skipped": 1, "already_imported": 0, "errors": []}
    records = MemoryRecord.objects.order_by("id")
    assert [(record.subject, record.type, record.text, record.confirmations, record.source) for record in records] == [
        ("anna", "preference", "Wil facturen per e-mail.", 1, "api"),
        (None, "commitment", "Belt vrijdag terug.", 0, "api"),
    ]
    assert records[0].metadata == {"bron": "crm"}
    event = AuditEvent.objects.get(action="memory.imported")
    assert (event.actor, event.target, event.details) == (
        tenant.key.id, tenant.index.id, {"format": "core", "lines": 4, "created": 2, "confirmed": 1, "skipped": 1, "already_imported": 0}
    )


def test_a_failing_line_imports_nothing_and_every_failing_line_is_named(tenant):
    """Nothing partial (R-12.3): each error names its line (from 1) and field."""
    body = _lines(
        {"type": "fact", "text": "Goed."},
        {"type": "onbekend", "text": "Een sessie."},
        {"type": "fact"},
    ) + "niet json\n"

    response = _import(tenant.client(), tenant.index.id, body)

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["param"] == "lines[2].type"
    assert error["message"].startswith("3 of 4 lines cannot be imported; nothing was imported. Line 2: Unknown type 'onbekend'.")
    assert error["lines"] == [
        {"line": 2, "param": "type", "message": "Unknown type 'onbekend'. Allowed types: fact, preference, commitment, behaviour."},
        {"line": 3, "param": "text", "message": "This field is required."},
        {"line": 4, "param": None, "message": "The line is not JSON."},
    ]
    assert _written() == ((), ())


def test_a_dry_run_answers_the_report_and_writes_nothing(tenant):
    response = _import(tenant.client(), tenant.index.id, _lines({"type": "fact", "text": "Eén."}, {"type": "fact", "text": "eén"}), dry_run="true")

    assert response.status_code == 200
    assert response.json() == {"dry_run": True, "lines": 2, "created": 1, "confirmed": 1, "skipped": 0, "already_imported": 0, "errors": []}
    assert _written() == ((), ())


def test_mem0_and_zep_exports_are_mapped_onto_fact_records(tenant):
    mem0 = _lines({"id": "m-1", "memory": "Is vegetariër", "user_id": "anna", "metadata": {"bron": "chat"},
                   "categories": ["food"], "created_at": "2025-01-02T03:04:05Z", "hash": "x", "updated_at": None})
    zep = _lines(
        {"uuid": "z-1", "fact": "Anna woont in Utrecht.", "user_id": "anna", "valid_at": "2025-02-01T00:00:00Z", "invalid_at": None},
        {"uuid": "z-2", "fact": "Anna woont in Delft.", "user_id": "anna", "invalid_at": "2025-02-01T00:00:00Z"},
    )

    from_mem0 = _import(tenant.client(), tenant.index.id, mem0, origin="mem0")
    from_zep = _import(tenant.client(), tenant.index.id, zep, origin="zep")

    assert from_mem0.json()["created"] == 1 and from_zep.json() == {"dry_run": False, "lines": 2, "created": 1, "confirmed": 0, "skipped": 1, "already_imported": 0, "errors": []}
    assert {(record.subject, record.type, record.text): record.metadata for record in MemoryRecord.objects.all()} == {
        ("anna", "fact", "Is vegetariër"): {"bron": "chat", "mem0.id": "m-1", "mem0.categories": ["food"]},
        ("anna", "fact", "Anna woont in Utrecht."): {"zep.uuid": "z-1", "zep.valid_at": "2025-02-01T00:00:00Z"},
    }


def test_a_request_for_a_person_imports_only_her_records(tenant):
    """R-2.2: lines naming nobody become hers; a line naming someone else fails the import."""
    anna = tenant.client(subject="anna")

    refused = _import(anna, tenant.index.id, _lines({"type": "fact", "text": "Van Bob.", "subject": "bob"}))
    accepted = _import(anna, tenant.index.id, _lines({"type": "fact", "text": "Van Anna."}))

    assert refused.status_code == 400
    assert refused.json()["error"]["lines"] == [{"line": 1, "param": "subject", "message": "A request for a person imports only her records."}]
    assert accepted.status_code == 200
    assert list(MemoryRecord.objects.values_list("subject", "text")) == [("anna", "Van Anna.")]


def test_bad_requests_name_the_field(tenant):
    client = tenant.client()

    empty = _import(client, tenant.index.id, "\n\n")
    wrong_format = _import(client, tenant.index.id, _lines({"type": "fact", "text": "x"}), origin="csv")
    as_json = client.post(f"/v1/memory/import?index_id={tenant.index.id}", {"type": "fact"}, format="json")

    assert (empty.status_code, empty.json()["error"]["param"]) == (400, "body")
    assert (wrong_format.status_code, wrong_format.json()["error"]["param"]) == (400, "origin")
    assert as_json.status_code == 415
    assert _written() == ((), ())


def test_an_idempotent_retry_answers_the_first_report_and_writes_nothing_new(tenant):
    """R-2.6."""
    body = _lines({"type": "fact", "text": "Eenmaal."})
    client = tenant.client()

    first = client.post(f"/v1/memory/import?index_id={tenant.index.id}", data=body, content_type=NDJSON, HTTP_IDEMPOTENCY_KEY="imp-1")
    again = client.post(f"/v1/memory/import?index_id={tenant.index.id}", data=body, content_type=NDJSON, HTTP_IDEMPOTENCY_KEY="imp-1")

    assert first.json() == again.json()
    assert again["Idempotent-Replayed"] == "true"
    assert MemoryRecord.objects.get().confirmations == 0


@pytest.mark.parametrize(
    ("who", "status"),
    [("reader_key", 403), ("other_organisation", 404), ("anonymous", 401), ("no_memory", 403)],
)
def test_permission_matrix_a_denial_writes_nothing(tenant, other_tenant, anonymous, who, status):
    """R-2.7, R-4.2, R-5.2: the write right on the index; another organisation's index is a 404."""
    clients = {
        "reader_key": lambda: tenant.key_client(write=())[0],
        "other_organisation": lambda: other_tenant.client(),
        "anonymous": lambda: anonymous,
        "no_memory": lambda: tenant.key_client(capabilities=["knowledge"])[0],
    }

    response = _import(clients[who](), tenant.index.id, _lines({"type": "fact", "text": "x"}))

    assert response.status_code == status
    assert _written() == ((), ())


def test_another_person_token_cannot_import_into_her_name(tenant):
    """Owner, other person: a subject token for anna with X-Core-Subject bob is a 403."""
    from core_memory.keys.services import subject_token_create

    token, secret = subject_token_create(caller=Caller(key=tenant.key, subject="anna"), ttl_seconds=600)
    from tests.factories import client_for

    response = _import(client_for(secret, subject="bob"), tenant.index.id, _lines({"type": "fact", "text": "x"}))

    assert response.status_code == 403
    assert _written() == ((), ())


def test_cores_own_export_with_unicode_line_separators_in_a_text_imports_through_the_api(tenant, other_tenant, write, tmp_path):
    """Issue 19: the API split the body with `str.splitlines()`, which also breaks at U+2028,
    U+2029 and U+0085 — characters JSON allows raw in a string and `export_memory` writes raw —
    so Core's own export was 'not JSON' to the API. Lines end at \\n (or \\r\\n) only."""
    texts = ["Adres:\u2028Dorpsstraat 1", "Eerste alinea.\u2029Tweede alinea.", "Regel\u0085volgende regel"]
    for text in texts:
        write(text, subject="anna")
    exported = tmp_path / "acme.jsonl"
    call_command("export_memory", "--org", tenant.organisation.id, "--output", str(exported), stderr=StringIO())
    body = exported.read_bytes().decode("utf-8").replace("\n", "\r\n", 1)  # a Windows line end reads the same
    assert "\u2028" in body and "\u2029" in body and "\u0085" in body

    response = _import(other_tenant.client(), other_tenant.index.id, body)

    assert response.status_code == 200, response.content
    assert response.json()["created"] == 3
    imported = MemoryRecord.objects.filter(organisation=other_tenant.organisation).order_by("id")
    assert [(record.subject, record.text) for record in imported] == [("anna", text) for text in texts]
