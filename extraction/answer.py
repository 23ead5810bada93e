"""Reading a `core_extraction` answer into Core's values.

The shape is checked whole before anything is written: a value of the wrong kind, an
unknown `op`, a record without the text its `op` needs, a confidence outside 0..1 — any of
them is an `InvalidModelOutput`, and the window fails with nothing written. What the shape
allows but the request did not show (ids), or the switch does not take (types), is the
window service's to drop.
"""
from __future__ import annotations

from dataclasses import dataclass

from core_memory.llm.structured import InvalidModelOutput, answer_objects, answer_strings, answer_value
from extraction.reading import LESSON_BASES, LESSON_KINDS, REACTIONS, RESULTS

OPS = ("add", "confirm", "correct")


@dataclass(frozen=True)
class RecordNote:
    op: str
    target_id: str | None
    type: str | None
    text: str | None
    confidence: float
    item_ids: list[str]


@dataclass(frozen=True)
class EpisodeNote:
    first_item_id: str
    last_item_id: str
    intent: str | None
    text: str
    result: str
    reaction: str


@dataclass(frozen=True)
class LessonNote:
    kind: str
    text: str
    basis: str
    item_ids: list[str]


@dataclass(frozen=True)
class ExtractionAnswer:
    records: list[RecordNote]
    episodes: list[EpisodeNote]
    lessons: list[LessonNote]


def _text(container: dict, name: str, *, path: str, required: bool = True) -> str | None:
    value = answer_value(container, name, "string", path=path, required=required)
    if required and not value.strip():
        raise InvalidModelOutput(f"{path}.{name} is empty.")
    return value.strip() if value is not None and value.strip() else None


def _record(path: str, value: dict) -> RecordNote:
    op = answer_value(value, "op", "string", path=path, choices=OPS)
    changes = op != "confirm"
    target_id = answer_value(value, "target_id", "string", path=path, required=op != "add")
    confidence = answer_value(value, "confidence", "number", path=path, required=False)
    if confidence is not None and not 0.0 <= confidence <= 1.0:
        raise InvalidModelOutput(f"{path}.confidence is not between 0 and 1.")
    return RecordNote(
        op=op,
        target_id=target_id,
        type=answer_value(value, "type", "string", path=path, required=changes),
        text=_text(value, "text", path=path, required=changes),
        # A record the model gives no confidence is as sure as one written by hand.
        confidence=1.0 if confidence is None else float(confidence),
        item_ids=answer_strings(value, "item_ids", path=path),
    )


def _episode(path: str, value: dict) -> EpisodeNote:
    return EpisodeNote(
        first_item_id=answer_value(value, "first_item_id", "string", path=path),
        last_item_id=answer_value(value, "last_item_id", "string", path=path),
        intent=_text(value, "intent", path=path, required=False),
        text=_text(value, "text", path=path),
        result=answer_value(value, "result", "string", path=path, choices=RESULTS),
        reaction=answer_value(value, "reaction", "string", path=path, choices=REACTIONS),
    )


def _lesson(path: str, value: dict) -> LessonNote:
    return LessonNote(
        kind=answer_value(value, "kind", "string", path=path, choices=LESSON_KINDS),
        text=_text(value, "text", path=path),
        basis=answer_value(value, "basis", "string", path=path, choices=LESSON_BASES),
        item_ids=answer_strings(value, "item_ids", path=path),
    )


def extraction_answer_read(data: dict, *, episodes: bool, lessons: bool) -> ExtractionAnswer:
    """The answer's parts; `episodes` and `lessons` are read only when they were asked for."""
    return ExtractionAnswer(
        records=[_record(path, value) for path, value in answer_objects(data, "records")],
        episodes=[_episode(path, value) for path, value in answer_objects(data, "episodes")] if episodes else [],
        lessons=[_lesson(path, value) for path, value in answer_objects(data, "lessons")] if lessons else [],
    )
