"""A person's subject is whatever the API accepts — up to 255 characters (R-2.2) — in every
column that can hold one, and through every entrance (issue 28: a subject of 201–255
characters could be written but not erased or exported: the audit event's `target` was
varchar(200), a 500)."""
from __future__ import annotations

from urllib.parse import quote

import pytest
from django.apps import apps
from django.contrib.postgres.fields import ArrayField

from audit.models import AuditEvent
from core_memory.base.api.views import MAX_SUBJECT_LENGTH
from memory.models import MemoryRecord
from tests.core_memory.mcp.test_server import _payload, _session
from tests.factories import console_client, make_key

# Columns that hold a person's subject, by name: a person column, an audit event's target (the
# `person.*` events name her), an idempotent answer's persons.
SUBJECT_COLUMNS = ("subject", "target", "persons")


def _columns_holding_a_subject() -> dict[str, int | None]:
    found = {}
    for model in apps.get_models():
        for field in model._meta.concrete_fields:
            if field.name in SUBJECT_COLUMNS or field.name.endswith("_subject"):
                inner = field.base_field if isinstance(field, ArrayField) else field
                found[f"{model._meta.label}.{field.name}"] = inner.max_length
    return found


def test_every_column_that_can_hold_a_subject_takes_what_the_api_accepts():
    """Walks every model: a column named for a person takes 255 characters (or has no limit). A
    new one is listed here, so it is looked at."""
    columns = _columns_holding_a_subject()

    assert sorted(columns) == [
        "audit.AuditEvent.target", "core_api.IdempotentRequest.persons", "keys.SubjectToken.subject",
        "maintenance.MaintenanceJob.subject", "memory.HistoricalMemoryRecord.subject", "memory.MemoryRecord.subject",
        "memory.ModelEmbedding.subject", "memory.RecordEmbedding.subject", "persons.Person.subject", "threads.Response.subject", "threads.Thread.subject",
        "webhooks.WebhookEvent.subject",
    ]
    assert {name: length for name, length in columns.items() if length is not None and length < MAX_SUBJECT_LENGTH} == {}


def _long_subject(mark: str) -> str:
    subject = f"{mark}-" + "lang" * 70
    return subject[:MAX_SUBJECT_LENGTH]


WRITING = {"retrieval_tool": True, "write_tool": True}


@pytest.mark.django_db(transaction=True)
def test_a_255_character_subject_is_written_exported_and_erased_through_the_api_the_console_and_mcp(site, tenant, administrator):
    """Issue 28: one person written over MCP and the API, given rules, exported by the API and the
    console and erased by the API; another written over MCP, exported and erased by the console.
    Every step answers as for a short subject, and nothing of either is left."""
    by_api, by_console = _long_subject("api"), _long_subject("console")
    assert len(by_api) == len(by_console) == MAX_SUBJECT_LENGTH
    _, secret = make_key(tenant.organisation, capabilities=["knowledge", "memory"], memory=WRITING)

    async def write(session):
        return await session.call_tool(f"memory__{tenant.index.id}__write", {"type": "fact", "text": "Woont in Haarlem."})

    for subject in (by_api, by_console):
        _, written = _session(site, secret, write, subject=subject)
        assert _payload(written)["subject"] == subject
    api = tenant.client(subject=by_api)
    assert api.post("/v1/memory", {"index_id": tenant.index.id, "type": "fact", "text": "Werkt in Delft."}, format="json").status_code == 201
    path = f"/v1/persons/{quote(by_api, safe='')}"
    assert tenant.client().patch(path, {"helper_model_may_read": False}, format="json").status_code == 200
    exported = tenant.client().get(f"{path}/export")
    assert exported.status_code == 200 and len(exported.json()["records"]) == 2
    console = console_client(administrator)
    page = f"/console/persons/person/{tenant.organisation.id}/{quote(by_console, safe='')}/"
    assert console.get(page).status_code == 200
    from_console = console.get(f"{page}export/")
    assert from_console.status_code == 200 and len(from_console.json()["records"]) == 1

    erased = tenant.client().delete(path)
    receipt = console.post(f"{page}erase/")

    assert erased.status_code == 200 and erased.json()["erased"]["records"] == 2
    assert receipt.status_code == 200 and receipt.context["receipt"]["erased"]["records"] == 1
    assert not MemoryRecord.objects.filter(subject__in=[by_api, by_console]).exists()
    assert not AuditEvent.objects.filter(target__in=[by_api, by_console]).exists()
