"""`manage.py export_memory` and `import_memory` (issue 14): a whole organisation as JSON Lines
and back, all or nothing, with progress on stderr; audited."""
from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from audit.models import AuditEvent
from core_memory.base.callers import Caller
from memory.models import MemoryRecord
from tests.factories import make_index, make_key, resolved_for
from memory.services.writes import RecordDraft

pytestmark = pytest.mark.django_db


def test_an_organisation_exported_and_imported_into_another_holds_the_same_records(tenant, other_tenant, write, tmp_path):
    """The round trip: every record that is not deleted, into another organisation's index."""
    write("Wil facturen per e-mail.", type="preference", subject="anna", metadata={"bron": "crm"})
    write("Acme sluit om vijf uur.")
    ended = write("Woont in Delft.", subject="anna")
    from memory.services.writes import record_write

    record_write(caller=Caller(key=tenant.key, subject="anna", actor="test"), index=tenant.index, draft=RecordDraft(type="fact", text="Woont in Utrecht.", replaces=ended.id))
    exported = tmp_path / "acme.jsonl"
    errors = StringIO()

    call_command("export_memory", "--org", tenant.organisation.id, "--output", str(exported), stderr=errors)

    lines = [json.loads(line) for line in exported.read_text().splitlines()]
    assert [(line["subject"], line["text"], line["status"]) for line in lines] == [
        ("anna", "Wil facturen per e-mail.", "active"), (None, "Acme sluit om vijf uur.", "active"),
        ("anna", "Woont in Delft.", "ended"), ("anna", "Woont in Utrecht.", "active"),
    ]
    assert errors.getvalue().strip().endswith(f"exported 4 records of {tenant.organisation.id}")
    assert AuditEvent.objects.get(action="memory.exported").details == {"records": 4}

    output = StringIO()
    call_command("import_memory", "--org", other_tenant.organisation.id, "--key", other_tenant.key.id, "--input", str(exported),
                 "--index", other_tenant.index.id, stdout=output, stderr=StringIO())

    assert json.loads(output.getvalue()) == {"dry_run": False, "lines": 4, "created": 4, "confirmed": 0, "skipped": 0, "already_imported": 0, "errors": []}
    imported = MemoryRecord.objects.filter(organisation=other_tenant.organisation).order_by("id")
    assert [(record.subject, record.type, record.text, record.metadata, record.status) for record in imported] == [
        ("anna", "preference", "Wil facturen per e-mail.", {"bron": "crm"}, "active"), (None, "fact", "Acme sluit om vijf uur.", {}, "active"),
        ("anna", "fact", "Woont in Delft.", {}, "ended"), ("anna", "fact", "Woont in Utrecht.", {}, "active"),
    ]
    assert imported[2].replaced_by_id == imported[3].id and imported[3].replaces_id == imported[2].id


def test_import_into_the_indexes_each_line_names_and_a_failing_file_writes_nothing(tenant, tmp_path):
    second = resolved_for(tenant.key, make_index(tenant.organisation, name="tweede"))
    good = tmp_path / "good.jsonl"
    good.write_text(
        json.dumps({"index_id": tenant.index.id, "type": "fact", "text": "Een."}) + "\n"
        + json.dumps({"index_id": second.id, "type": "fact", "text": "Twee."}) + "\n"
    )
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"index_id": "idx_missing", "type": "fact", "text": "Drie."}) + "\n")

    with pytest.raises(CommandError, match=r"^1 of 1 lines cannot be imported; nothing was imported\. Line 1: No such index\.$"):
        call_command("import_memory", "--org", tenant.organisation.id, "--key", tenant.key.id, "--input", str(bad),
                     stdout=StringIO(), stderr=StringIO())
    call_command("import_memory", "--org", tenant.organisation.id, "--key", tenant.key.id, "--input", str(good),
                 stdout=StringIO(), stderr=StringIO())

    assert sorted(MemoryRecord.objects.values_list("index_id", "text")) == sorted([(tenant.index.id, "Een."), (second.id, "Twee.")])


def test_import_shows_progress_and_a_dry_run_writes_nothing(tenant, tmp_path):
    many = tmp_path / "many.jsonl"
    many.write_text("".join(json.dumps({"type": "fact", "text": f"Feit {number}."}) + "\n" for number in range(1200)))
    errors = StringIO()

    call_command("import_memory", "--org", tenant.organisation.id, "--key", tenant.key.id, "--input", str(many),
                 "--index", tenant.index.id, "--dry-run", stdout=StringIO(), stderr=errors)

    assert errors.getvalue().splitlines() == ["read 1000 lines…", "checked 1200 lines: 1200 created, 0 confirmed, 0 skipped, 0 already imported"]
    assert MemoryRecord.objects.count() == 0


def test_import_needs_a_usable_key_of_that_organisation(tenant, other_tenant, tmp_path):
    with pytest.raises(CommandError, match=r"^No usable key"):
        call_command("import_memory", "--org", tenant.organisation.id, "--key", other_tenant.key.id, "--input", str(tmp_path / "x"))
    reader, _ = make_key(tenant.organisation, write=())
    with pytest.raises(CommandError, match=r"^--index: This key's policy does not allow writing this index\.$"):
        call_command("import_memory", "--org", tenant.organisation.id, "--key", reader.id, "--index", tenant.index.id,
                     "--input", str(tmp_path / "x"))
