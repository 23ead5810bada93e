"""What a write asks and answers: the body of `POST /v1/memory` (also an item of a batch) and
the same JSON answer for the API and the write tool, so it lives with the records, not with
any one interface."""
from __future__ import annotations

from rest_framework import serializers
from rest_framework.fields import DateTimeField

from core_memory.base.validation import OffsetDateTimeField, StrictSerializer
from memory.services.writes import RecordDraft, RecordWriteResult

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
