"""Importing records from JSON Lines: Core's own export lines, and mem0's or Zep's exports
mapped onto them (docs/portability.md). One durable transaction: every line is written, or —
when any line fails, or on a dry run — none is, and every failing line is named.

A line is written by `record_import_within`, with the rules of `POST /v1/memory`: the same type
rules, confirmation of a text she already has (also of an earlier line of the same file), the
same rights; and it keeps what the export held (its times, confirmations, status, structured
fields, provenance), so an organisation's export brought into another organisation exports
again the same. Each record remembers where it came from (`import_source`): importing the same
file again writes nothing. A whole JSON document is read too: a person's export, and mem0's
`get_all` answer (`{"results": [...]}`). A savepoint per line lets the whole file be checked in
one pass.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC

from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from rest_framework import serializers

from audit.services import audit_event_record
from core_memory.base.errors import ApplicationError, InvalidRequest
from core_memory.base.storable import storable_check
from core_memory.base.validation import OffsetDateTimeField, StrictSerializer, first_error
from core_memory.base.callers import Caller
from core_memory.keys.models import ApiKey
from memory.exporting import PERSON_EXPORT_FORMAT, PERSON_EXPORT_RECORD_PARTS
from memory.models import MemoryRecord
from memory.services.imports import record_import_within, records_import_link
from stores.models import KnowledgeIndex
from stores.selectors import index_get_available

FORMATS = ("core", "mem0", "zep")
MAX_REPORTED_ERRORS = 100
MAX_LINE_CHARACTERS = 100_000


class ProvenanceField(StrictSerializer):
    thread_id = serializers.CharField(max_length=40, required=False, allow_null=True, default=None)
    item_ids = serializers.ListField(child=serializers.CharField(max_length=40), required=False, default=list)
    response_id = serializers.CharField(max_length=40, required=False, allow_null=True, default=None)


class CoreLine(StrictSerializer):
    """A record as Core's export writes it (`manage.py export_memory`, memory.exporting, and the
    records of a person's export), kept whole. A deleted record's line is skipped; `history`
    and the retrieval count's twin fields are read and left."""

    id = serializers.CharField(max_length=40, required=False, allow_null=True, default=None)
    index_id = serializers.CharField(max_length=40, required=False)
    subject = serializers.CharField(max_length=255, required=False, allow_null=True, default=None)
    type = serializers.CharField(max_length=40)
    text = serializers.CharField(max_length=20_000)
    metadata = serializers.DictField(required=False, default=dict)
    confidence = serializers.FloatField(min_value=0.0, max_value=1.0, default=1.0)
    due_at = OffsetDateTimeField(required=False, allow_null=True, default=None)
    expires_at = OffsetDateTimeField(required=False, allow_null=True, default=None)
    status = serializers.ChoiceField(choices=MemoryRecord.Status.choices, required=False, default="active")
    contested = serializers.BooleanField(required=False, default=False)
    contradicts = serializers.ListField(child=serializers.CharField(max_length=40), max_length=1000, required=False, default=list)
    confirmations = serializers.IntegerField(min_value=0, max_value=2**31 - 1, required=False, default=0)
    last_confirmed_at = OffsetDateTimeField(required=False, allow_null=True, default=None)
    source = serializers.ChoiceField(choices=MemoryRecord.Source.choices, required=False, default="api")
    trusted = serializers.BooleanField(required=False, default=True)
    done = serializers.BooleanField(required=False, default=False)
    structured = serializers.DictField(required=False, allow_null=True, default=None)
    replaces = serializers.CharField(max_length=40, required=False, allow_null=True, default=None)
    replaced_by = serializers.CharField(max_length=40, required=False, allow_null=True, default=None)
    provenance = ProvenanceField(required=False, default=dict)
    retrieval_count = serializers.IntegerField(min_value=0, max_value=2**31 - 1, required=False, default=0)
    created_at = OffsetDateTimeField(required=False, allow_null=True, default=None)
    updated_at = OffsetDateTimeField(required=False, allow_null=True, default=None)


# Export fields read and left: every version (a person's export), and what says nothing new.
CORE_LINE_IGNORED = frozenset({"history"})


class Mem0Line(serializers.Serializer):
    """A memory of mem0's `get_all`/export: `memory`, `user_id`, `metadata`, `categories`, …"""

    memory = serializers.CharField(max_length=20_000)
    user_id = serializers.CharField(max_length=255, required=False, allow_null=True, default=None)
    metadata = serializers.DictField(required=False, allow_null=True, default=None)
    categories = serializers.ListField(child=serializers.CharField(), required=False, allow_null=True, default=None)
    id = serializers.CharField(required=False, allow_null=True, default=None)
    created_at = serializers.CharField(required=False, allow_null=True, default=None)
    updated_at = serializers.CharField(required=False, allow_null=True, default=None)


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
    """One line, read and mapped; `skip` says why it is not written (a deleted record, an
    ended Zep fact). `values` are the record's fields for `record_import_within`; `source_id`
    is the record's id where it came from, `links` the source ids it replaces / was replaced by,
    `contradicts` the source ids of the records it contradicts."""

    index_id: str | None
    subject: str | None
    values: dict
    source_id: str | None = None
    links: dict = field(default_factory=dict)
    skip: str | None = None
    contradicts: list = field(default_factory=list)


class LineError(Exception):
    def __init__(self, *, param: str | None, message: str):
        super().__init__(message)
        self.param = param
        self.message = message


def _without_nulls(values: dict) -> dict:
    return {name: value for name, value in values.items() if value not in (None, [], {})}


def _their_time(value: str | None, *, param: str):
    """mem0's and Zep's own time of a memory (ISO 8601; without an offset, UTC)."""
    if value is None:
        return None
    try:
        parsed = parse_datetime(value)
    except ValueError:
        parsed = None
    if parsed is None:
        raise LineError(param=param, message="Not a date and time (ISO 8601).")
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _record_values(*, type: str, text: str, metadata: dict, created_at=None, updated_at=None, **kept) -> dict:  # noqa: A002
    """A new record's fields: what a write would set, with what the line kept."""
    return {
        "type": type, "text": text, "metadata": metadata, "confidence": 1.0, "status": MemoryRecord.Status.ACTIVE,
        "contested": False, "confirmations": 0, "last_confirmed_at": None, "source": MemoryRecord.Source.API,
        "trusted": True, "due_at": None, "done": False, "expires_at": None, "structured": None, "retrieval_count": 0,
        "provenance": {}, "created_at": created_at, "updated_at": updated_at or created_at, **kept,
    }


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
    values = dict(serializer.validated_data)
    if format == "mem0":
        metadata = {**(values["metadata"] or {}), **_without_nulls({"mem0.id": values["id"], "mem0.categories": values["categories"]})}
        record = _record_values(
            type="fact", text=values["memory"], metadata=metadata,
            created_at=_their_time(values["created_at"], param="created_at"),
            updated_at=_their_time(values["updated_at"], param="updated_at"),
        )
        return ImportLine(None, values["user_id"], record, values["id"])
    if format == "zep":
        metadata = _without_nulls({"zep.uuid": values["uuid"], "zep.valid_at": values["valid_at"]})
        record = _record_values(type="fact", text=values["fact"], metadata=metadata, created_at=_their_time(values["created_at"], param="created_at"))
        return ImportLine(None, values["user_id"], record, values["uuid"], skip="ended" if values["invalid_at"] else None)
    skip = "deleted" if values["status"] == MemoryRecord.Status.DELETED else None
    links = {"replaces": values.pop("replaces"), "replaced_by": values.pop("replaced_by")}
    contradicts = values.pop("contradicts")
    source_id, index_id, subject = values.pop("id"), values.pop("index_id", None), values.pop("subject")
    return ImportLine(index_id, subject, _record_values(**values), source_id, links, skip, contradicts)


def _whole_document(text: str, *, format: str) -> list[str] | None:  # noqa: A002
    """The records of a whole JSON document as lines: mem0's `{"results": [...]}`, a person's
    export (her records, episodes and lessons); None when the text is no such document."""
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(parsed, dict):
        return None
    if isinstance(parsed.get("results"), list):
        if format != "mem0":
            raise InvalidRequest("This is mem0's answer ({\"results\": [...]}): import it with origin mem0.", param="origin")
        return [json.dumps(each, ensure_ascii=False) for each in parsed["results"]]
    if parsed.get("format") == PERSON_EXPORT_FORMAT:
        if format != "core":
            raise InvalidRequest("This is Core's export of a person: import it with origin core.", param="origin")
        records = [each for part in PERSON_EXPORT_RECORD_PARTS for each in (parsed.get(part) or [])]
        return [json.dumps(each, ensure_ascii=False) for each in records]
    return None


def import_lines(lines: Iterable[str], *, format: str) -> Iterator[str]:  # noqa: A002
    """The lines to import: JSON Lines as they come (read one at a time), or the records of a
    whole JSON document (see `_whole_document`), which may span many lines."""
    lines = iter(lines)
    head: list[str] = []
    for raw in lines:
        head.append(raw)
        if raw.strip():
            break
    first = head[-1].strip() if head else ""
    if first.startswith("{"):
        whole = _whole_document(first, format=format)
        if whole is None:
            try:
                json.loads(first)
            except (ValueError, RecursionError):
                # Not a line of its own: perhaps a document written over many lines.
                head.extend(lines)
                whole = _whole_document("\n".join(each.rstrip("\n") for each in head), format=format)
        if whole is not None:
            yield from whole
            return
    yield from head
    yield from lines


@dataclass
class ImportReport:
    dry_run: bool
    lines: int = 0
    created: int = 0
    confirmed: int = 0
    skipped: int = 0
    already_imported: int = 0
    errors: list[dict] = field(default_factory=list)
    error_count: int = 0

    def as_dict(self) -> dict:
        return {
            "dry_run": self.dry_run,
            "lines": self.lines,
            "created": self.created,
            "confirmed": self.confirmed,
            "skipped": self.skipped,
            "already_imported": self.already_imported,
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


def _line_index(*, key: ApiKey, line: ImportLine, index: KnowledgeIndex | None, index_map: dict, cache: dict) -> KnowledgeIndex:
    if index is not None:  # the import's own index wins over the one a line names
        return index
    if line.index_id is None:
        raise LineError(param="index_id", message="Name the line's index, or the index of the whole import.")
    index_id = index_map.get(line.index_id, line.index_id)
    if index_id not in cache:
        try:
            cache[index_id] = index_get_available(caller=Caller(key=key), index_id=index_id, param="index_id", right="write")
        except ApplicationError as error:
            cache[index_id] = error
    found = cache[index_id]
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
    caller: Caller,
    lines: Iterable[str],
    format: str = "core",  # noqa: A002 — the format's name
    index: KnowledgeIndex | None = None,
    index_map: dict[str, str] | None = None,
    dry_run: bool = False,
    progress: Callable[[int], None] | None = None,
) -> dict:
    """Imports JSON Lines of records (docs/portability.md) as the caller's key (audited as its
    actor), all or nothing.

    `index` (read for the key with the write right) receives every line, whatever index a line
    names; without it each line names its `index_id`, read through `index_map` (the source
    organisation's index id → this one's) when it is there. The caller's person, when set (the
    request's person), allows only her lines (a line naming nobody becomes hers). Blank lines are skipped; a line
    of a deleted record (or a Zep fact with `invalid_at`) is counted as skipped, one this
    organisation already imported (or holds: a restore) as already imported. Raises
    ImportFailed listing the failing lines; a dry run answers the same report and writes
    nothing. Audited as `memory.imported`.
    """
    if format not in FORMATS:
        raise InvalidRequest(f"format is one of {', '.join(FORMATS)}.", param="format")
    key, subject = caller.key, caller.subject
    report = ImportReport(dry_run=dry_run)
    state = _ImportState(
        now=timezone.now(), core_written_allowed=format == "core" and key.has_capability("management"), index_map=index_map or {}
    )
    try:
        with transaction.atomic(durable=True):
            for number, raw in enumerate(import_lines(lines, format=format), start=1):
                if progress is not None and number % 1000 == 0:
                    progress(number)
                if not raw.strip():
                    continue
                report.lines += 1
                try:
                    _import_one(caller=caller, raw=raw, format=format, index=index, subject=subject, report=report, state=state)
                except LineError as error:
                    report.error_count += 1
                    if len(report.errors) < MAX_REPORTED_ERRORS:
                        report.errors.append({"line": number, "param": error.param, "message": error.message})
            if report.errors:
                raise _RollBack
            records_import_link(caller=caller, links={
                record_id: {name: state.written.get(source) for name, source in links.items()}
                for record_id, links in state.links.items()
            }, contradictions={
                record_id: [state.written[source] for source in sources if source in state.written]
                for record_id, sources in state.contradictions.items()
            })
            if not dry_run:
                audit_event_record(
                    caller=caller,
                    action="memory.imported",
                    target=index.id if index is not None else "",
                    details={"format": format, "lines": report.lines, "created": report.created,
                             "confirmed": report.confirmed, "skipped": report.skipped,
                             "already_imported": report.already_imported},
                )
            else:
                raise _RollBack
    except _RollBack:
        pass
    if report.errors:
        raise ImportFailed(report)
    return report.as_dict()


@dataclass
class _ImportState:
    now: object
    core_written_allowed: bool
    index_map: dict
    indexes: dict = field(default_factory=dict)
    # Source id → the new record's id, and the corrections and contradictions to link once every line is in.
    written: dict = field(default_factory=dict)
    links: dict = field(default_factory=dict)
    contradictions: dict = field(default_factory=dict)


def _already_imported(*, organisation_id: str, format: str, line: ImportLine) -> bool:  # noqa: A002
    if not line.source_id:
        return False
    records = MemoryRecord.objects.for_organisation(organisation_id)
    if records.filter(import_source=f"{format}:{line.source_id}").exists():
        return True
    # Core's own export read back into the organisation it came from: the record is there.
    return format == "core" and records.filter(pk=line.source_id).exists()


def _import_one(*, caller, raw, format, index, subject, report, state) -> None:  # noqa: A002
    key = caller.key
    line = import_line_read(raw=raw, format=format)
    if line.subject is not None:
        try:
            storable_check(line.subject, param="subject")
        except ApplicationError as error:
            raise LineError(param="subject", message=error.message) from None
    if subject is not None and line.subject not in (None, subject):
        raise LineError(param="subject", message="A request for a person imports only her records.")
    target = _line_index(key=key, line=line, index=index, index_map=state.index_map, cache=state.indexes)
    if line.skip is not None:
        report.skipped += 1
        return
    if _already_imported(organisation_id=key.organisation_id, format=format, line=line):
        report.already_imported += 1
        return
    values = {
        **line.values,
        "subject": line.subject if subject is None else subject,
        "import_source": f"{format}:{line.source_id}" if line.source_id else None,
    }
    if not key.has_capability("management"):
        # Only a key that manages the organisation writes as Core's own processes did.
        values["source"] = MemoryRecord.Source.API
    try:
        with transaction.atomic():
            result = record_import_within(
                caller=caller, index=target, values=values, core_written_allowed=state.core_written_allowed, now=state.now,
            )
    except ApplicationError as error:
        raise LineError(param=error.param, message=error.message) from None
    if result.status == "confirmed":
        report.confirmed += 1
        return
    report.created += 1
    if line.source_id:
        state.written[line.source_id] = result.record.id
    if any(line.links.values()):
        state.links[result.record.id] = line.links
    if line.contradicts:
        state.contradictions[result.record.id] = line.contradicts
