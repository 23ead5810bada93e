"""What is embedded for a record: its date and its text (docs/decisions.md "Embeddings").

    [8 May 2023] <the record's text>

The date is the record's creation day in its organisation's time zone, in English. The
embedding then carries when something was said (the embeddings spike measured 3 to 6 points
of LoCoMo recall from it), and a question that names a time comes nearer to its records.
A lesson gets no date: it is a working method, true whatever the day, and the same lesson
written on two days must have the same vector to be found a near duplicate
(memory.embedding.selectors.lesson_near_duplicate).

Each record is embedded on its own. Embedding it together with the record written just before
it (its conversational context) raised LoCoMo recall@10 by 6 points, where every record is a
turn of a dialogue, but cost a store of separate facts a third of its first-place hits
(bench/RESULTS.md); it is not done.
"""
from __future__ import annotations

import hashlib
from datetime import datetime
from zoneinfo import ZoneInfo

MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)


def day_text(moment: datetime, *, zone: str) -> str:
    local = moment.astimezone(ZoneInfo(zone))
    return f"{local.day} {MONTHS[local.month - 1]} {local.year}"


UNDATED_TYPES = ("lesson",)


def record_passage(*, text: str, type: str, created_at: datetime, zone: str) -> str:  # noqa: A002 — the record's field
    if type in UNDATED_TYPES:
        return text
    return f"[{day_text(created_at, zone=zone)}] {text}"


def passage_digest(*, model_id: str, passage: str) -> str:
    return hashlib.sha256(f"{model_id}\n{passage}".encode()).hexdigest()
