"""What a write answers (R-5.5): the same JSON for `POST /v1/memory` and the write tool
(R-6.5), so it lives with the records, not with either interface."""
from __future__ import annotations

from rest_framework.fields import DateTimeField

from memory.services import RecordWriteResult


def record_write_answer(result: RecordWriteResult) -> dict:
    """The R-5.5 answer to a write; also the write tool's result (R-6.5)."""
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
