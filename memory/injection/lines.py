"""The block's text and the one token estimator.

Token estimator, the one used everywhere: `token_estimate(text=...)` is the text's UTF-8
byte length divided by four, rounded up. It needs no model files (so it works offline),
is exact to compute, never under-counts badly for Dutch or English prose (roughly four
bytes per token), and is additive enough that the walk can keep a running byte count and
stay equal to the estimate of the final text.
"""
from __future__ import annotations

import json
import math

from memory.models import MemoryRecord

EPISODE_SPAN_FIELDS = ("from", "to", "thread_id", "first_item_id")
BYTES_PER_TOKEN = 4

# Characters JSON leaves unescaped that some readers take for line breaks: escaped so
# a record's text can never start a line of its own.
_LINE_BREAK_ESCAPES = {0x85: "\\u0085", 0x2028: "\\u2028", 0x2029: "\\u2029"}


def token_estimate(*, text: str) -> int:
    """The documented estimator: ceil(UTF-8 bytes / 4)."""
    return tokens_of_bytes(len(text.encode("utf-8")))


def tokens_of_bytes(byte_count: int) -> int:
    return -(-byte_count // BYTES_PER_TOKEN)


def data_json(value) -> str:
    """Compact JSON in which every record text stays a string value on one line."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).translate(_LINE_BREAK_ESCAPES)


def confidence_percentage(value: float) -> str:
    """A whole percentage string of a 0..1 value, rounded half up: 0.825 → "83%"."""
    whole = math.floor(round(float(value) * 100, 6) + 0.5)
    return f"{min(100, max(0, whole))}%"


def episode_span(record: MemoryRecord) -> dict:
    """An episode's `from`, `to`, `thread_id`, `first_item_id` (those it has; older episodes have none)."""
    if record.type != "episode":
        return {}
    structured = record.structured or {}
    return {name: structured[name] for name in EPISODE_SPAN_FIELDS if structured.get(name) is not None}


def record_line(record: MemoryRecord) -> str:
    """One line of the block: type, confidence (effective), [episode span], text, contested, due."""
    payload: dict = {
        "type": record.type,
        "confidence": confidence_percentage(record.effective_confidence),
        **episode_span(record),
        "text": record.text,
    }
    if record.contested:
        payload["contested"] = True
    if record.type == "commitment" and record.due_at is not None:
        payload["due"] = record.due_at.isoformat()
    return data_json(payload)
