"""Records as portable JSON (docs/portability.md): one record with its provenance, and, for a
person's export, every stored version. `manage.py export_memory` writes these as JSON Lines,
which `import_memory` and `POST /v1/memory/import` read back."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from rest_framework.fields import DateTimeField

from memory.models import MemoryRecord

_TIME = DateTimeField()
# A person's export (core_memory.flows.export) is read back by the import: its name, and the
# parts of it that hold records.
PERSON_EXPORT_FORMAT = "core-geheugen.person-export"
PERSON_EXPORT_RECORD_PARTS = ("records", "episodes", "lessons")
# The fields every version of a record has too (history leaves the retrieval count out).
_STORED_FIELDS = (
    "id", "index_id", "subject", "type", "text", "metadata", "confidence", "status", "contested", "confirmations",
    "source", "trusted", "due_at", "done", "expires_at", "structured", "replaces_id", "replaced_by_id",
)
_TIMES = ("last_confirmed_at", "due_at", "expires_at", "created_at", "updated_at")


def _time(value) -> str | None:
    return _TIME.to_representation(value) if value is not None else None


def _stored(row) -> dict:
    values = {name.removesuffix("_id") if name in ("replaces_id", "replaced_by_id") else name: getattr(row, name) for name in _STORED_FIELDS}
    values["provenance"] = {"thread_id": row.thread_id, "item_ids": list(row.item_ids or []), "response_id": row.response_id}
    for name in _TIMES:
        values[name] = _time(getattr(row, name))
    return values


def record_export(record: MemoryRecord, *, contradicts: list[str]) -> dict:
    """A record as export lines and the person export show it: every stored field, the records
    of the same export it contradicts (`contradicts`, so an import links them again), provenance,
    the retrieval count, times in ISO 8601."""
    return {**_stored(record), "contradicts": contradicts, "retrieval_count": record.retrieval_count}


def _contradictions(links) -> dict[str, list[str]]:
    """Record id → the ids of the records maintenance linked to it as contradicting it, of
    `links` (rows of the records' contradiction table)."""
    found: dict[str, list[str]] = defaultdict(list)
    for record_id, other_id in links.order_by("from_memoryrecord_id", "to_memoryrecord_id").values_list(
        "from_memoryrecord_id", "to_memoryrecord_id"
    ):
        found[record_id].append(other_id)
    return found


def records_export_with_history(records) -> list[dict]:
    """Each record with `history`: every version, oldest first, with what changed it and when.
    `contradicts` names only records among `records` (a person's export names no one else's)."""
    records = list(records)
    record_ids = [record.id for record in records]
    contradictions = _contradictions(
        MemoryRecord.contradicts.through.objects.filter(from_memoryrecord_id__in=record_ids, to_memoryrecord_id__in=record_ids)
    )
    versions: dict[str, list[dict]] = defaultdict(list)
    for version in MemoryRecord.history.filter(id__in=[record.id for record in records]).order_by("history_id"):
        reason = version.history_change_reason or ""
        versions[version.id].append(
            {
                **_stored(version),
                "changed_at": _time(version.history_date),
                "change": reason.rpartition(" by ")[0] or reason,
                "actor": reason.rpartition(" by ")[2] or None,
            }
        )
    return [{**record_export(record, contradicts=contradictions[record.id]), "history": versions[record.id]} for record in records]


def records_export_lines(*, organisation_id: str) -> Iterator[dict]:
    """every record of the organisation that is not deleted, index by index, oldest first."""
    records = MemoryRecord.objects.for_organisation(organisation_id).exclude(status=MemoryRecord.Status.DELETED)
    # Contested pairs are few: every link among the exported records at once.
    contradictions = _contradictions(
        MemoryRecord.contradicts.through.objects.filter(from_memoryrecord__in=records, to_memoryrecord__in=records)
    )
    for record in records.order_by("index_id", "id").iterator(chunk_size=2000):
        yield record_export(record, contradicts=contradictions[record.id])
