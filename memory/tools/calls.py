"""Running a model's call of a memory tool: the answer is the tool result's
text; every refusal is inside it."""
from __future__ import annotations

import json
from datetime import datetime

from rest_framework import serializers

from core_memory.base.errors import ApplicationError
from core_memory.base.validation import OffsetDateTimeField, StrictSerializer, first_error
from core_memory.base.callers import Caller
from memory.answers import record_write_answer
from memory.injection.lines import confidence_percentage, data_json, episode_span
from memory.models import MemoryRecord
from memory.retrieval import records_search_retrieve
from memory.search import SearchFilters
from memory.services.writes import RecordDraft, record_write
from memory.tools.catalogue import SEARCH, WRITE, tool_index, writable_types
from stores.models import KnowledgeIndex


class SearchArguments(StrictSerializer):
    query = serializers.CharField(max_length=2000)
    types = serializers.ListField(child=serializers.CharField(max_length=40), required=False, max_length=20)
    after = OffsetDateTimeField(required=False)
    before = OffsetDateTimeField(required=False)


class WriteArguments(StrictSerializer):
    type = serializers.CharField(max_length=40)
    text = serializers.CharField(max_length=20_000)
    metadata = serializers.DictField(required=False)
    confidence = serializers.FloatField(required=False, min_value=0.0, max_value=1.0)
    due_at = OffsetDateTimeField(required=False, allow_null=True)
    expires_at = OffsetDateTimeField(required=False, allow_null=True)


class _Refusal(Exception):
    def __init__(self, *, status: int, message: str, param: str | None, error_type: str = "invalid_request_error"):
        super().__init__(message)
        self.body = {"status": status, "type": error_type, "message": message, "param": param}


def _arguments(serializer_class: type[serializers.Serializer], arguments: str) -> dict:
    try:
        parsed = json.loads(arguments or "{}")
    except (ValueError, RecursionError):  # a model may nest deeper than the parser follows
        raise _Refusal(status=400, message="The arguments are not a JSON object.", param=None) from None
    if not isinstance(parsed, dict):
        raise _Refusal(status=400, message="The arguments are not a JSON object.", param=None)
    serializer = serializer_class(data=parsed)
    if not serializer.is_valid():
        param, message = first_error(serializer.errors)
        raise _Refusal(status=400, message=f"{param}: {message}" if param else message, param=param)
    return dict(serializer.validated_data)


def _hit(record: MemoryRecord) -> dict:
    """A search hit: confidence as a whole percentage of the effective value."""
    hit: dict = {
        "id": record.id,
        "type": record.type,
        "confidence": confidence_percentage(record.effective_confidence),
        **episode_span(record),
        "text": record.text,
        "metadata": record.metadata or {},
        "shared": record.subject is None,
    }
    if record.type == "commitment":
        hit["due_at"] = record.due_at.isoformat() if record.due_at else None
        hit["done"] = record.done
    hit["created_at"] = record.created_at.isoformat()
    if record.contested:
        hit["contested"] = True
    return hit


def _search(*, caller: Caller, index: KnowledgeIndex, arguments: str, now: datetime) -> dict:
    values = _arguments(SearchArguments, arguments)
    hits = records_search_retrieve(
        caller=caller,
        index=index,
        query=values["query"],
        filters=SearchFilters(types=values.get("types") or None, after=values.get("after"), before=values.get("before")),
        now=now,
    )
    return {"hits": [_hit(record) for record, _score in hits]}


def _write(*, caller: Caller, index: KnowledgeIndex, arguments: str, provenance: dict, trusted: bool) -> dict:
    allowed = writable_types(index=index)
    try:
        values = _arguments(WriteArguments, arguments)
        # record_write's own type rules refuse `episode`, `lesson` and unknown types.
        result = record_write(
            caller=caller,
            index=index,
            draft=RecordDraft(
                type=values["type"],
                text=values["text"],
                metadata=values.get("metadata"),
                confidence=values.get("confidence", 1.0),
                due_at=values.get("due_at"),
                expires_at=values.get("expires_at"),
                source=MemoryRecord.Source.TOOL,
                provenance=provenance,
                trusted=trusted,
            ),
        )
    except _Refusal as refusal:
        refusal.body["allowed_types"] = allowed
        raise
    except ApplicationError as error:
        refusal = _Refusal(status=error.status_code, message=error.message, param=error.param, error_type=error.error_type)
        refusal.body["allowed_types"] = allowed
        raise refusal from None
    return record_write_answer(result)


def memory_tool_call(
    *, caller: Caller, tool_name: str, arguments: str, provenance: dict, now: datetime, trusted: bool = True
) -> str:
    """Run one call of a memory tool for the caller's person; the answer is the tool result's text.

    With the key's `trust_envelope` capability a search result (hits or a refusal) is
    wrapped as `{"trust": "data", "source": <tool name>, "content": …}`. A write's
    result is the write's answer object itself, or its refusal, wrapped never (the same text
    as the answer to `POST /v1/memory`). The caller adds TRUST_ENVELOPE_NOTE to every
    tool message. A record the write writes is `trusted` as the caller says: not when the model
    wrote it after reading text from outside Core.
    """
    kind = WRITE if tool_name.endswith(f"__{WRITE}") else SEARCH
    try:
        index, kind = tool_index(caller=caller, name=tool_name, param=None)
        if kind == SEARCH:
            result = _search(caller=caller, index=index, arguments=arguments, now=now)
        else:
            result = _write(caller=caller, index=index, arguments=arguments, provenance=provenance, trusted=trusted)
    except _Refusal as refusal:
        result = {"error": refusal.body}
    except ApplicationError as error:
        # Every refusal, whichever service raised it, is a result the model reads.
        result = {"error": _Refusal(status=error.status_code, message=error.message, param=error.param, error_type=error.error_type).body}
    if kind == SEARCH and caller.may("trust_envelope"):
        result = {"trust": "data", "source": tool_name, "content": result}
    return data_json(result)
