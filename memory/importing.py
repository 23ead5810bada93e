"""Importing records from JSON Lines: Core's own export lines, and mem0's or Zep's exports
mapped onto them (docs/portability.md). One durable transaction: every line is written, or —
when any line fails, or on a dry run — none is, and every failing line is named.

A line goes through the same `record_write_within` as `POST /v1/memory`: the same type rules,
confirmation of a text she already has (also of an earlier line of the same file), the same
rights. A savepoint per line lets the whole file be checked in one pass.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from django.db import transaction
from django.utils import timezone
from rest_framework import serializers

from audit.services import audit_event_record
from core_memory.base.errors import ApplicationError, InvalidRequest
from core_memory.base.storable import storable_check
from core_memory.base.validation import OffsetDateTimeField, StrictSerializer, first_error
from core_memory.keys.models import ApiKey
from memory.models import MemoryRecord
from memory.services import record_write_within
from stores.models import KnowledgeIndex
from stores.selectors import index_get_available

FORMATS = ("core", "mem0", "zep")
MAX_REPORTED_ERRORS = 100
MAX_LINE_CHARACTERS = 100_000


class CoreLine(StrictSerializer):
    """A record as Core's export writes it (`manage.py export_memory`, memory.exporting): what a
    write keeps of it. A line whose `status` is not `active` is skipped; the fields a write
    sets itself (`CORE_LINE_IGNORED`) are read and left."""

    index_id = serializers.CharField(max_length=40, required=False)
    subject = serializers.CharField(max_length=255, required=False, allow_null=True, default=None)
    type = serializers.CharField(max_length=40)
    text = serializers.CharField(max_length=20_000)
    metadata = serializers.DictField(required=False, default=dict)
    confidence = serializers.FloatField(min_value=0.0, max_value=1.0, default=1.0)
    due_at = OffsetDateTimeField(required=False, allow_null=True, default=None)
    status = serializers.ChoiceField(choices=MemoryRecord.Status.choices, required=False, default="active")


# Export fields that a write sets itself: ids, counters, times, provenance, history.
CORE_LINE_IGNORED = frozenset({
    "id", "contested", "confirmations", "source", "trusted", "done", "structured", "replaces", "replaced_by",
    "provenance", "last_confirmed_at", "created_at", "updated_at", "retrieval_count", "history",
})


class Mem0Line(serializers.Serializer):
    """A memory of mem0's `get_all`/export: `memory`, `user_id`, `metadata`, `categories`, …"""

    memory = serializers.CharField(max_length=20_000)
    user_id = serializers.CharField(max_length=255, required=False, allow_null=True, default=None)
    metadata = serializers.DictField(required=False, allow_null=True, default=None)
    categories = serializers.ListField(child=serializers.CharField(), required=False, allow_null=True, default=None)
    id = serializers.CharField(required=False, allow_null=True, default=None)
    created_at = serializers.CharField(required=False, allow_null=True, default=None)


class ZepLine(serializers.Serializer):
    """A fact of Zep's graph (`fact`, `uuid`, `valid_at`, `invalid_at`, …) with the user it
    belongs to (`user_id`)."""

    fact = serializers.CharField(max_length=20_000)
    user_id = serializers.CharField(max_length=255, required=False, allow_null=True, default=None)
    uuid = serializers.CharField(required=False, allow_null=True, default=None)
    valid_at = serializers.CharField(required=False, allow_null=True, default=None)
    invalid_at = serializers.CharField(required=False, allow_null=True, default=None)
    created_at = serializers.CharField(required=False, allow_null=True, default=None)


@dataclass(frozen=True)
class ImportLine:
    """One line, read and mapped; `skip` says why it is not written (an ended fact)."""

    index_id: str | None
    subject: str | None
    type: str
    text: str
    metadata: dict
    confidence: float
    due_at: object
    skip: str | None = None


class LineError(Exception):
    def __init__(self, *, param: str | None, message: str):
        super().__init__(message)
        self.param = param
        self.message = message


def _without_nulls(values: dict) -> dict:
    return {name: value for name, value in values.items() if value not in (None, [], {})}


def import_line_read(*, raw: str, format: str) -> ImportLine:  # noqa: A002 — the format's name
    """Reads and maps one line; LineError names the field."""
    if len(raw) > MAX_LINE_CHARACTERS:
        raise LineError(param=None, message=f"A line holds at most {MAX_LINE_CHARACTERS} characters.")
    try:
        parsed = json.loads(raw)
    except (ValueError, RecursionError):
        raise LineError(param=None, message="The line is not JSON.") from None
    if not isinstance(parsed, dict):
        raise LineError(param=None, message="The line is not a JSON object.")
    if format == "core":
        parsed = {name: value for name, value in parsed.items() if name not in CORE_LINE_IGNORED}
    serializer_class = {"core": CoreLine, "mem0": Mem0Line, "zep": ZepLine}[format]
    serializer = serializer_class(data=parsed)
    if not serializer.is_valid():
        param, message = first_error(serializer.errors)
        raise LineError(param=param, message=message)
    values = serializer.validated_data
    if format == "mem0":
        metadata = {**(values["metadata"] or {}), **_without_nulls(
            {"mem0.id": values["id"], "mem0.categories": values["categories"], "mem0.created_at": values["created_at"]}
        )}
        return ImportLine(None, values["user_id"], "fact", values["memory"], metadata, 1.0, None)
    if format == "zep":
        metadata = _without_nulls({"zep.uuid": values["uuid"], "zep.valid_at": values["valid_at"], "zep.created_at": values["created_at"]})
        skip = "ended" if values["invalid_at"] else None
        return ImportLine(None, values["user_id"], "fact", values["fact"], metadata, 1.0, None, skip)
    skip = None if values["status"] == MemoryRecord.Status.ACTIVE else values["status"]
    return ImportLine(
        values.get("index_id"), values["subject"], values["type"], values["text"], values["metadata"],
        values["confidence"], values["due_at"], skip,
    )


@dataclass
class ImportReport:
    dry_run: bool
    lines: int = 0
    created: int = 0
    confirmed: int = 0
    skipped: int = 0
    errors: list[dict] = field(default_factory=list)
    error_count: int = 0

    def as_dict(self) -> dict:
        return {
            "dry_run": self.dry_run,
            "lines": self.lines,
            "created": self.created,
            "confirmed": self.confirmed,
            "skipped": self.skipped,
            "errors": self.errors,
        }


class ImportFailed(ApplicationError):
    """400 naming the first failing line and field; `report` lists up to 100 of them."""

    def __init__(self, report: ImportReport):
        first = report.errors[0]
        path = f"lines[{first['line']}]" + (f".{first['param']}" if first["param"] else "")
        super().__init__(
            f"{report.error_count} of {report.lines} lines cannot be imported; nothing was imported. "
            f"Line {first['line']}: {first['message']}",
            param=path,
        )
        self.report = report


class _RollBack(Exception):
    pass


def _line_index(*, key: ApiKey, line: ImportLine, index: KnowledgeIndex | None, cache: dict) -> KnowledgeIndex:
    if index is not None:  # the import's own index wins over the one a line names
        return index
    if line.index_id is None:
        raise LineError(param="index_id", message="Name the line's index, or the index of the whole import.")
    if line.index_id not in cache:
        try:
            cache[line.index_id] = index_get_available(key=key, index_id=line.index_id, param="index_id", right="write")
        except ApplicationError as error:
            cache[line.index_id] = error
    found = cache[line.index_id]
    if isinstance(found, ApplicationError):
        raise LineError(param="index_id", message=found.message)
    return found


def json_lines_split(text: str) -> list[str]:
    r"""The lines of a JSON Lines text: it ends a line with \n (or \r\n) only. `str.splitlines()`
    also breaks at U+2028, U+2029, U+0085 and more, which JSON allows raw inside a string and
    our own export writes so."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def records_import(
    *,
    key: ApiKey,
    lines: Iterable[str],
    format: str = "core",  # noqa: A002 — the format's name
    index: KnowledgeIndex | None = None,
    subject: str | None = None,
    dry_run: bool = False,
    actor: str,
    progress: Callable[[int], None] | None = None,
) -> dict:
    """Imports JSON Lines of records (docs/portability.md) as the key, all or nothing.

    `index` (read for the key with the write right) receives every line, whatever index a line
    names; without it each line names its `index_id`. `subject` set (the request's person) allows only her lines (a line
    naming nobody becomes hers). Blank lines are skipped; a line of an ended record (or a Zep
    fact with `invalid_at`) is counted as skipped. Raises ImportFailed listing the failing
    lines; a dry run answers the same report and writes nothing. Audited as `memory.imported`.
    """
    if format not in FORMATS:
        raise InvalidRequest(f"format is one of {', '.join(FORMATS)}.", param="format")
    report = ImportReport(dry_run=dry_run)
    indexes: dict = {}
    now = timezone.now()
    try:
        with transaction.atomic(durable=True):
            for number, raw in enumerate(lines, start=1):
                if progress is not None and number % 1000 == 0:
                    progress(number)
                if not raw.strip():
                    continue
                report.lines += 1
                try:
                    _import_one(key=key, raw=raw, format=format, index=index, subject=subject,
                                actor=actor, now=now, report=report, indexes=indexes)
                except LineError as error:
                    report.error_count += 1
                    if len(report.errors) < MAX_REPORTED_ERRORS:
                        report.errors.append({"line": number, "param": error.param, "message": error.message})
            if report.errors:
                raise _RollBack
            if not dry_run:
                audit_event_record(
                    organisation=key.organisation_id,
                    actor=actor,
                    action="memory.imported",
                    target=index.id if index is not None else "",
                    details={"format": format, "lines": report.lines, "created": report.created,
                             "confirmed": report.confirmed, "skipped": report.skipped},
                )
            else:
                raise _RollBack
    except _RollBack:
        pass
    if report.errors:
        raise ImportFailed(report)
    return report.as_dict()


def _import_one(*, key, raw, format, index, subject, actor, now, report, indexes) -> None:  # noqa: A002
    line = import_line_read(raw=raw, format=format)
    if line.subject is not None:
        try:
            storable_check(line.subject, param="subject")
        except ApplicationError as error:
            raise LineError(param="subject", message=error.message) from None
    if subject is not None and line.subject not in (None, subject):
        raise LineError(param="subject", message="A request for a person imports only her records.")
    target = _line_index(key=key, line=line, index=index, cache=indexes)
    if line.skip is not None:
        report.skipped += 1
        return
    try:
        with transaction.atomic():
            result = record_write_within(
                key=key, index=target, subject=line.subject if subject is None else subject, type=line.type,
                text=line.text, metadata=line.metadata, confidence=line.confidence, due_at=line.due_at,
                actor=actor, now=now,
            )
    except ApplicationError as error:
        raise LineError(param=error.param, message=error.message) from None
    if result.status == "confirmed":
        report.confirmed += 1
    else:
        report.created += 1
