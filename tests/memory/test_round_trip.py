"""An organisation, or a person, moves whole (issue 20): an export imported into another
organisation exports again the same document, apart from ids and the import's own audit; the
same file imported twice writes nothing the second time; mem0's and Zep's memories keep their
own time."""
from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from core_memory.flows.export import person_export_document
from core_memory.base.callers import Caller
from memory.models import MemoryRecord
from memory.services.changes import record_update
from memory.services.contradictions import records_contradiction_mark_within
from memory.services.writes import RecordDraft, record_write, record_write_by_core_within
from tests.factories import make_index, resolved_for
from tests.factories import with_draft

pytestmark = pytest.mark.django_db

NDJSON = "application/x-ndjson"
LONG_AGO = timezone.now() - timedelta(days=400)


def _organisation_with_everything(tenant):
    """Every type and state an export holds: shared and personal records, a confirmation, a
    correction (an ended record), a contested pair, a commitment done, structured fields,
    provenance, an episode and a lesson, in two indexes, made a year ago and read since."""
    second = make_index(tenant.organisation, name="tweede")

    def write(text, *, index=None, subject=None, **fields):
        target = resolved_for(tenant.key, index or tenant.index)
        return record_write(caller=Caller(key=tenant.key, subject=subject, actor="test"), index=target, **with_draft(text=text, **fields)).record

    preference = write("Wil facturen per e-mail.", type="preference", subject="anna", metadata={"bron": "crm"}, confidence=0.7)
    write("wil facturen per e-mail", type="preference", subject="anna")  # a confirmation
    write("Acme sluit om vijf uur.", type="fact")
    ended = write("Woont in Delft.", type="fact", subject="anna")
    utrecht = write("Woont in Utrecht.", type="fact", subject="anna", replaces=ended.id,
                    provenance={"thread_id": "thr_1", "item_ids": ["itm_1", "itm_2"], "response_id": "resp_1"})
    amsterdam = write("Woont in Amsterdam.", type="fact", subject="anna")
    records_contradiction_mark_within(caller=Caller.system(organisation_id=tenant.organisation.id, actor="maintenance"), pairs=[(utrecht.id, amsterdam.id)])
    promise = write("Belt vrijdag terug.", type="commitment", subject="anna", due_at=LONG_AGO + timedelta(days=3),
                    structured={"who": "Piet", "what": "terugbellen"})
    record_update(caller=Caller(key=tenant.key, subject=None, actor="test"), record_id=promise.id, changes={"done": True})
    write("Spreekt Nederlands.", type="behaviour", subject="bram", index=second)
    record_write_by_core_within(
                                caller=Caller.system(organisation_id=tenant.organisation.id, actor="test"),
                                index_id=tenant.index.id,
                                subject="anna",
                                draft=RecordDraft(
                                    type="episode",
                                    text="Anna vroeg om haar facturen.",
                                    source="extraction",
                                ),
                            )
    record_write_by_core_within(
                                caller=Caller.system(organisation_id=tenant.organisation.id, actor="test"),
                                index_id=tenant.index.id,
                                subject=None,
                                draft=RecordDraft(
                                    type="lesson",
                                    text="Vraag eerst het klantnummer.",
                                    source="maintenance",
                                ),
                            )
    records = MemoryRecord.objects.filter(organisation=tenant.organisation)
    records.update(created_at=LONG_AGO, updated_at=LONG_AGO + timedelta(days=1))
    records.filter(pk=preference.pk).update(retrieval_count=5)
    return second


def _export(organisation) -> list[dict]:
    output = StringIO()
    call_command("export_memory", "--org", organisation.id, stdout=output, stderr=StringIO())
    return [json.loads(line) for line in output.getvalue().splitlines()]


def _without_ids(lines: list[dict]) -> list[dict]:
    """Each id as the order it first appears in: two documents compare apart from their ids."""
    names: dict[str, str] = {}

    def name(value):
        return None if value is None else names.setdefault(value, f"#{len(names)}")

    return [
        {**line, "id": name(line["id"]), "index_id": name(line["index_id"]), "replaces": name(line["replaces"]),
         "replaced_by": name(line["replaced_by"]), "contradicts": [name(other) for other in line["contradicts"]]}
        for line in lines
    ]


def _import(target, path, *maps) -> dict:
    output = StringIO()
    arguments = [f"--index-map={source}={into}" for source, into in maps]
    call_command("import_memory", "--org", target.organisation.id, "--key", target.key.id, "--input", str(path), *arguments,
                 stdout=output, stderr=StringIO())
    return json.loads(output.getvalue())


def test_an_organisation_exported_and_imported_into_a_new_one_exports_the_same_document(tenant, other_tenant, tmp_path):
    """Issue 20: every type (episodes and lessons too), with its times, confirmations,
    confidence, due date, structured fields, provenance, corrections and contradictions (the
    contested pair points at each other again, by the new ids)."""
    second = _organisation_with_everything(tenant)
    there = _export(tenant.organisation)
    path = tmp_path / "acme.jsonl"
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in there))
    other_second = make_index(other_tenant.organisation, name="tweede")

    report = _import(other_tenant, path, (tenant.index.id, other_tenant.index.id), (second.id, other_second.id))

    assert report == {"dry_run": False, "lines": 9, "created": 9, "confirmed": 0, "skipped": 0, "already_imported": 0, "errors": []}
    here = _export(other_tenant.organisation)
    utrecht, amsterdam = (MemoryRecord.objects.get(organisation=other_tenant.organisation, text=text) for text in ("Woont in Utrecht.", "Woont in Amsterdam."))
    assert (list(utrecht.contradicts.all()), list(amsterdam.contradicts.all())) == ([amsterdam], [utrecht])
    assert utrecht.contested and amsterdam.contested
    assert {line["type"] for line in here} == {"preference", "fact", "commitment", "behaviour", "episode", "lesson"}
    assert _without_ids(here) == _without_ids(there)
    assert [line["created_at"] for line in here] == [line["created_at"] for line in there]


def test_the_same_file_imported_twice_changes_nothing_the_second_time(tenant, other_tenant, tmp_path):
    """Issue 20: the source ids are remembered; confirmations do not rise."""
    second = _organisation_with_everything(tenant)
    path = tmp_path / "acme.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in _export(tenant.organisation)))
    other_second = make_index(other_tenant.organisation, name="tweede")
    maps = ((tenant.index.id, other_tenant.index.id), (second.id, other_second.id))
    _import(other_tenant, path, *maps)
    first = _export(other_tenant.organisation)

    again = _import(other_tenant, path, *maps)

    assert again == {"dry_run": False, "lines": 9, "created": 0, "confirmed": 0, "skipped": 0, "already_imported": 9, "errors": []}
    assert _export(other_tenant.organisation) == first


def test_an_export_read_back_into_its_own_organisation_writes_nothing(tenant, tmp_path):
    """A restore of what is still there finds every record at home."""
    second = _organisation_with_everything(tenant)
    before = _export(tenant.organisation)
    path = tmp_path / "acme.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in before))

    report = _import(tenant, path)

    assert report["already_imported"] == 9 and report["created"] == 0
    assert _export(tenant.organisation) == before
    assert second.records.count() == 1


def test_a_persons_export_imports_into_another_organisation_whole(tenant, other_tenant):
    """Issue 20: the document `GET /v1/persons/{subject}/export` answers is an import's input."""
    _organisation_with_everything(tenant)
    document = person_export_document(caller=Caller.console(organisation_id=tenant.organisation.id, actor="console:admin", subject="anna"))

    response = other_tenant.client().post(
        f"/v1/memory/import?index_id={other_tenant.index.id}", data=json.dumps(document, indent=2), content_type=NDJSON
    )

    assert response.status_code == 200, response.content
    # her two preferences' record, the ended address and the two contested ones, the promise, the episode
    assert response.json()["created"] == 6
    again = person_export_document(caller=Caller.console(organisation_id=other_tenant.organisation.id, actor="console:admin", subject="anna"))
    for part in ("records", "episodes", "lessons"):
        here = [{name: value for name, value in each.items() if name != "history"} for each in again[part]]
        there = [{name: value for name, value in each.items() if name != "history"} for each in document[part]]
        assert _without_ids(here) == _without_ids(there), part
    assert [version["change"] for version in again["episodes"][0]["history"]] == ["imported"]


def test_core_written_types_need_an_import_of_cores_export_by_a_key_with_management(tenant):
    """Episodes and lessons are Core's: a key without `management` cannot make them up."""
    writer, _ = tenant.key_client(capabilities=("knowledge", "memory"))
    line = json.dumps({"type": "episode", "text": "Een sessie.", "subject": "anna"}) + "\n"

    refused = writer.post(f"/v1/memory/import?index_id={tenant.index.id}", data=line, content_type=NDJSON)
    as_mem0 = tenant.client().post(
        f"/v1/memory/import?index_id={tenant.index.id}&origin=mem0", data=json.dumps({"memory": "x", "type": "episode"}), content_type=NDJSON
    )
    allowed = tenant.client().post(f"/v1/memory/import?index_id={tenant.index.id}", data=line, content_type=NDJSON)

    assert refused.status_code == 400
    assert refused.json()["error"]["param"] == "lines[1].type"
    assert "management" in refused.json()["error"]["message"]
    assert as_mem0.status_code == 200 and MemoryRecord.objects.filter(type="fact", text="x").exists()
    assert allowed.status_code == 200
    assert MemoryRecord.objects.get(type="episode").source == "api"


def test_mem0_and_zep_memories_keep_their_own_time(tenant):
    """Issue 20: decay, "last month" and recency read a year-old memory as a year old."""
    mem0 = {"results": [
        {"id": "m-1", "memory": "Is vegetariër", "user_id": "anna", "created_at": "2025-01-02T03:04:05-08:00", "updated_at": "2025-03-01T00:00:00Z"},
        {"id": "m-2", "memory": "Houdt van fietsen", "user_id": "anna", "created_at": "2025-01-05T10:00:00"},
    ]}
    zep = json.dumps({"uuid": "z-1", "fact": "Anna woont in Utrecht.", "user_id": "anna", "valid_at": "2024-06-01T00:00:00Z",
                      "created_at": "2024-06-02T00:00:00Z"})
    client = tenant.client()

    from_mem0 = client.post(f"/v1/memory/import?index_id={tenant.index.id}&origin=mem0", data=json.dumps(mem0, indent=1), content_type=NDJSON)
    from_zep = client.post(f"/v1/memory/import?index_id={tenant.index.id}&origin=zep", data=zep, content_type=NDJSON)
    again = client.post(f"/v1/memory/import?index_id={tenant.index.id}&origin=mem0", data=json.dumps(mem0), content_type=NDJSON)

    assert from_mem0.status_code == 200, from_mem0.content
    assert from_mem0.json()["created"] == 2 and from_zep.json()["created"] == 1
    assert again.json()["already_imported"] == 2 and again.json()["created"] == again.json()["confirmed"] == 0
    times = {record.text: (record.created_at.isoformat(), record.changed_at.isoformat(), record.metadata) for record in MemoryRecord.objects.all()}
    assert times == {
        "Is vegetariër": ("2025-01-02T11:04:05+00:00", "2025-03-01T00:00:00+00:00", {"mem0.id": "m-1"}),
        "Houdt van fietsen": ("2025-01-05T10:00:00+00:00", "2025-01-05T10:00:00+00:00", {"mem0.id": "m-2"}),
        "Anna woont in Utrecht.": ("2024-06-02T00:00:00+00:00", "2024-06-02T00:00:00+00:00", {"zep.uuid": "z-1", "zep.valid_at": "2024-06-01T00:00:00Z"}),
    }


def test_a_mem0_answer_sent_as_core_lines_is_refused_naming_the_origin(tenant):
    response = tenant.client().post(
        f"/v1/memory/import?index_id={tenant.index.id}", data=json.dumps({"results": [{"memory": "x"}]}), content_type=NDJSON
    )

    assert response.status_code == 400
    assert response.json()["error"]["param"] == "origin"


def test_a_time_that_is_not_one_names_the_field(tenant):
    line = json.dumps({"memory": "x", "created_at": "gisteren"})

    response = tenant.client().post(f"/v1/memory/import?index_id={tenant.index.id}&origin=mem0", data=line, content_type=NDJSON)

    assert response.status_code == 400
    assert response.json()["error"]["param"] == "lines[1].created_at"
    assert not MemoryRecord.objects.exists()
