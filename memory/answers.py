"""What a write asks and answers: the body of `POST /v1/memory` (also an item of a batch) and
the same JSON answer for the API and the write tool, so it lives with the records, not with
any one interface."""
from __future__ import annotations

from django.utils import timezone
from rest_framework import serializers
from rest_framework.fields import DateTimeField

from core_memory.base.errors import InvalidRequest
from core_memory.base.validation import OffsetDateTimeField, StrictSerializer, first_error
from memory.models import MemoryRecord
from memory.services.writes import RecordDraft, RecordWriteResult

# Effective confidence and a search's score are answered to this many digits.
EFFECTIVE_CONFIDENCE_DIGITS = 4
# 201 when a record was created or corrected, 200 when one was confirmed.
WRITE_STATUS_CODES = {"created": 201, "corrected": 201, "confirmed": 200}


class RecordInputSerializer(StrictSerializer):
    """One record to write: the body of `POST /v1/memory` without its index, and an item of a batch."""

    type = serializers.CharField(max_length=40)
    text = serializers.CharField(max_length=20_000)
    metadata = serializers.DictField(required=False, default=dict)
    confidence = serializers.FloatField(min_value=0.0, max_value=1.0, default=1.0)
    due_at = OffsetDateTimeField(required=False, allow_null=True, default=None)
    replaces = serializers.RegexField(r"^mem_[0-9a-z]+$", required=False, allow_null=True, default=None)
    expires_at = OffsetDateTimeField(
        required=False, allow_null=True, default=None,
        help_text="When it stops being true (in the future); unset: after its type's lifetime in the store's `expiry` section, else never.",
    )


def record_fields_checked(values: dict) -> dict:
    """Some of a record's fields (`type`, `text`, `confidence`), typed, checked as a write's body is:
    their validated values, or an InvalidRequest naming the first one refused (in the language of
    the request: the console's reader's, the API's English)."""
    serializer = RecordInputSerializer(data=values, partial=True)
    if not serializer.is_valid():
        param, message = first_error(serializer.errors)
        raise InvalidRequest(message, param=param)
    return {name: serializer.validated_data[name] for name in values}


def record_draft(data: dict) -> RecordDraft:
    """The draft a validated record input asks for."""
    return RecordDraft(
        type=data["type"], text=data["text"], metadata=data["metadata"], confidence=data["confidence"],
        due_at=data["due_at"], replaces=data["replaces"], expires_at=data["expires_at"],
    )


def record_write_answer(result: RecordWriteResult) -> dict:
    """The answer to a write; also the write tool's result."""
    record = result.record
    return {
        "memory_id": record.id,
        "status": result.status,
        "type": record.type,
        "text": record.text,
        "confidence": record.confidence,
        "subject": record.subject,
        "index_id": record.index_id,
        "created_at": DateTimeField().to_representation(record.created_at),
    }


def record_answer(record: MemoryRecord) -> dict:
    """A record as memory.apis.RecordOutputSerializer shapes it (the shape every record route
    answers), made directly: a search answers up to 50 of them, and DRF's walk over each one's
    fields was a tenth of the search's Python."""
    zone = timezone.get_current_timezone()
    return {
        "id": str(record.id),
        "index_id": str(record.index_id),
        "subject": _text(record.subject),
        "type": str(record.type),
        "text": str(record.text),
        "metadata": record.metadata,
        "confidence": float(record.confidence),
        "contested": bool(record.contested),
        "status": str(record.status),
        "confirmations": int(record.confirmations),
        "last_confirmed_at": _moment(record.last_confirmed_at, zone),
        "source": str(record.source),
        "trusted": bool(record.trusted),
        "provenance": {
            "thread_id": _text(record.thread_id),
            "item_ids": None if record.item_ids is None else [_text(item) for item in record.item_ids],
            "response_id": _text(record.response_id),
        },
        "due_at": _moment(record.due_at, zone),
        "done": bool(record.done),
        "expires_at": _moment(record.expires_at, zone),
        "structured": record.structured,
        "replaces": _text(record.replaces_id),
        "replaced_by": _text(record.replaced_by_id),
        "created_at": _moment(record.created_at, zone),
        "updated_at": _moment(record.updated_at, zone),
        "retrieval_count": int(record.retrieval_count),
        "effective_confidence": round(float(record.effective_confidence), EFFECTIVE_CONFIDENCE_DIGITS),
    }


def _text(value) -> str | None:
    return None if value is None else str(value)


def _moment(value, zone) -> str | None:
    """DRF's DateTimeField in ISO 8601: in the current time zone, UTC written as Z."""
    if value is None:
        return None
    text = value.astimezone(zone).isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text
