"""What a write answers: the same JSON for `POST /v1/memory` and the write tool
, so it lives with the records, not with either interface."""
from __future__ import annotations

from rest_framework.fields import DateTimeField

from memory.services.writes import RecordWriteResult


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
