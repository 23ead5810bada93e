"""Reading one window, as the durable-work runner runs every unit
(core_memory.base.work.runner: claim, prepare, ask, write). What is extraction's own:

- Prepare: check what would make reading pointless before paying for it — the key the switch
  runs under (`threads`, the write right), the thread's read rule and redaction of personal
  data — and show the model the window's items and the person's current records.
- Ask the switch's model; a bad answer fails the window with `invalid_model_output`.
- Write: every record, episode and lesson through memory's services, in the transaction that
  makes the window `ready` with its counts.
"""
from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import NamedTuple

from django.utils import timezone

from core_memory.base.callers import Caller
from core_memory.base.errors import ApplicationError, Conflict, PermissionDenied
from core_memory.base.work.claims import work_erased
from core_memory.base.work.runner import FAILED, End, WorkFailed, WorkRunner
from core_memory.keys.models import ApiKey
from core_memory.llm.metering import token_limit_reached
from core_memory.llm.structured import INVALID_MODEL_OUTPUT, UnusableAnswer, structured_answer_read, structured_completion
from core_memory.pii.placeholders import Placeholders, RedactionError
from core_memory.pii.selectors import ReadMode, thread_read_mode
from core_memory.pii.services import thread_texts_redact
from core_memory.threads.models import Item, Response, Thread
from core_memory.webhooks.services import webhook_event_emit
from extraction.answer import EpisodeNote, LessonNote, RecordNote, extraction_answer_read
from extraction.episodes import episode_structured
from extraction.models import ExtractionRun, ExtractionSwitch, ExtractionWindow
from extraction.reading import (
    MAX_LESSONS_PER_SESSION,
    SCHEMA_NAME,
    Shown,
    extraction_messages,
    extraction_schema,
    item_is_read,
    item_text,
    passage,
)
from extraction.selectors import SwitchState, switch_state
from extraction.services.planning import MAX_ATTEMPTS, QUIET_PERIOD, window_lease
from memory.embedding.selectors import lesson_near_duplicate
from memory.models import MemoryRecord
from memory.services.writes import RecordDraft, RecordWriteResult, record_write_within
from stores.models import KnowledgeIndex
from stores.selectors import index_find_available

logger = logging.getLogger(__name__)

# The person's records shown to the model, so it can confirm and correct them, most recently
# changed first.
MAX_RECORDS_SHOWN = 1000
EPISODE = "episode"
LESSON = "lesson"
# Who tells of a window's failure: extraction itself, for the window's organisation.
EXTRACTION_ACTOR = "extraction"


@dataclass(frozen=True)
class WindowOutcome:
    """What became of one attempt to read a window. `status` is the window's status after it,
    or `skipped` when this attempt did not claim it (done, taken, or its switch not active)."""

    window_id: str
    index_id: str | None
    status: str
    error_code: str = ""
    written: int = 0
    confirmed: int = 0
    replaced: int = 0


@dataclass
class _Reading:
    """Everything one window's request showed, to judge the answer by."""

    window: ExtractionWindow
    switch: ExtractionSwitch
    thread: Thread
    key: ApiKey
    index: KnowledgeIndex
    items: list[Item]
    records: dict[str, ShownRecord]
    sessions: list[dict] | None
    lessons_asked: bool
    placeholders: Placeholders
    now: datetime
    # The request that shows it all; none when the window holds nothing to read (only
    # reasoning or sealed items).
    messages: list[dict]


def _author(*, switch: ExtractionSwitch) -> tuple[ApiKey, KnowledgeIndex]:
    """The key the switch runs under, and its index as that key sees it. A key that lost
    `threads` or the right to write the index fails the window (the switch stays active: re-sending it mends this)."""
    keys = ApiKey.objects.for_organisation(switch.organisation_id).select_related("organisation")
    key = keys.filter(pk=switch.author_key_id).first()
    if key is None:  # deleted since the switch's state was read
        raise WorkFailed("author_unavailable", "The key the switch runs under no longer exists.")
    if not key.has_capability("threads"):
        raise WorkFailed("threads_capability_missing", "The key the switch runs under lacks the capability 'threads'.")
    index = index_find_available(caller=Caller(key=key), index_id=switch.index_id)
    if index is None or not key.has_capability("memory") or not key.may_write(index.pk):
        raise WorkFailed("write_denied", "The key the switch runs under may not write this store.")
    return key, index


def _sessions_asked(*, switch: ExtractionSwitch, window: ExtractionWindow) -> list[dict] | None:
    """The sessions whose episodes this window asks for: those ending in it that came
    to rest — their quiet period passed — after episodes were switched on."""
    if not switch.episodes or switch.episodes_since is None:
        return None
    asked = [
        session
        for session in window.sessions
        if datetime.fromisoformat(session["to"]) + QUIET_PERIOD > switch.episodes_since
    ]
    return asked or None


class ShownRecord(NamedTuple):
    id: str
    type: str
    text: str


def _records_shown(*, switch: ExtractionSwitch, thread: Thread) -> dict[str, ShownRecord]:
    """The thread's person's current records of the switch's types (the shared ones for a
    thread that names nobody), with ids, so the model can confirm and correct. Read
    as plain rows: a thousand model instances would cost more than the rest of the window."""
    rows = (
        MemoryRecord.objects.for_organisation(switch.organisation_id)
        .filter(index_id=switch.index_id, subject=thread.subject, type__in=switch.types, status=MemoryRecord.Status.ACTIVE)
        .order_by("-changed_at", "-id")
        .values_list("id", "type", "text")[:MAX_RECORDS_SHOWN]
    )
    return {row[0]: ShownRecord(*row) for row in rows}


def _redacted(*, thread: Thread, texts: list[str]) -> tuple[list[str], Placeholders]:
    """The texts as the model may see them under the thread's read rule, and the placeholders to restore its answer with."""
    mode = thread_read_mode(thread=thread)
    if mode == ReadMode.NEVER:
        raise WorkFailed("pii_redaction_failed", "This thread held redacted values before threads were marked; it is never read.")
    if mode == ReadMode.AS_WRITTEN:
        return texts, Placeholders()
    try:
        redaction = thread_texts_redact(thread=thread, texts=texts)
    except RedactionError as error:
        raise WorkFailed(error.code, "Personal data could not be redacted; the window was not sent.") from error
    return redaction.texts, redaction.placeholders


def _messages(*, reading: _Reading) -> list[dict]:
    """The request that shows the model the window's items and the person's records, as the
    thread's read rule lets it see them."""
    switch, readable = reading.switch, reading.items
    texts = [switch.instructions] + [item_text(item) for item in readable] + [record.text for record in reading.records.values()]
    texts, reading.placeholders = _redacted(thread=reading.thread, texts=texts)
    instructions, item_texts, record_texts = texts[0], texts[1 : 1 + len(readable)], texts[1 + len(readable) :]
    shown_items = [
        Shown(
            id=item.id,
            fields={
                "role": item.role,
                "kind": item.kind,
                **({"name": item.name} if item.name else {}),
                "at": item.created_at.isoformat(),
                # Cut after redacting: a cut through a value would leave half of it undetected.
                "text": passage(item, text),
            },
        )
        for item, text in zip(readable, item_texts, strict=True)
    ]
    shown_records = [
        Shown(id=record.id, fields={"type": record.type, "text": text})
        for record, text in zip(reading.records.values(), record_texts, strict=True)
    ]
    session_fields = None
    if reading.sessions is not None:
        session_fields = [{name: each[name] for name in ("first_item_id", "last_item_id", "from", "to")} for each in reading.sessions]
    return extraction_messages(
        instructions=instructions,
        types=switch.types,
        items=shown_items,
        records=shown_records,
        sessions=session_fields,
        lessons=reading.lessons_asked,
    )


def _reading_prepare(*, window: ExtractionWindow, now: datetime) -> _Reading:
    """What the window shows the model, and the messages that show it."""
    switch, thread = window.switch, window.thread
    key, index = _author(switch=switch)
    items = (
        Item.objects.for_organisation(switch.organisation_id)
        .filter(thread_id=thread.pk, position__gte=window.first_position, position__lte=window.last_position)
        .order_by("position")
    )
    readable = [item for item in items if item_is_read(item)]
    sessions = _sessions_asked(switch=switch, window=window)
    reading = _Reading(
        window=window,
        switch=switch,
        thread=thread,
        key=key,
        index=index,
        items=readable,
        records={},
        sessions=sessions,
        # Asked in the same call as the episodes; a thread that names nobody gets none.
        lessons_asked=switch.lessons and sessions is not None and thread.subject is not None,
        placeholders=Placeholders(),
        now=now,
        messages=[],
    )
    if readable:
        reading.records = _records_shown(switch=switch, thread=thread)
        reading.messages = _messages(reading=reading)
    return reading


def _shown_item_ids(reading: _Reading, item_ids: list[str]) -> list[str]:
    """Ids the request did not show are ignored: the model may only cite what it saw."""
    shown = {item.id for item in reading.items}
    return [item_id for item_id in dict.fromkeys(item_ids) if item_id in shown]


def _response_of(reading: _Reading, item_ids: list[str]) -> str | None:
    by_id = {item.id: item for item in reading.items}
    return next((by_id[item_id].response_id for item_id in reversed(item_ids) if by_id[item_id].response_id), None)


class _Writer:
    """Writes one window's answer inside the caller's transaction, counting what it did."""

    def __init__(self, reading: _Reading):
        self.reading = reading
        self.written = self.confirmed = self.replaced = 0
        self.actor = f"extraction:{reading.key.id}"

    def _write(self, *, type_name: str, text: str, item_ids: list[str], **fields) -> RecordWriteResult:
        """Writes one of the answer's records; `fields` are the rest of its draft (confidence, replaces, …)."""
        reading = self.reading
        provenance = {"thread_id": reading.thread.pk, "item_ids": item_ids, "response_id": _response_of(reading, item_ids)}
        result = record_write_within(
            caller=Caller(key=reading.key, subject=reading.thread.subject, actor=self.actor),
            index=reading.index,
            draft=RecordDraft(type=type_name, text=text, source=MemoryRecord.Source.EXTRACTION, provenance=provenance, **fields),
            now=reading.now,
        )
        if result.status == "confirmed":
            self.confirmed += 1
        else:
            self.written += 1
            self.replaced += result.status == "corrected"
        return result

    def records(self, notes: list[RecordNote]) -> None:
        """add / confirm / correct. An add or a correction of a type outside the
        switch's types is dropped; a target the request did not show, or that is no longer
        active, is ignored; each shown record is confirmed or corrected at most once."""
        reading = self.reading
        targets = [note.target_id for note in notes if note.target_id in reading.records]
        active = set(
            MemoryRecord.objects.for_organisation(reading.switch.organisation_id)
            .select_for_update()
            .filter(pk__in=targets, status=MemoryRecord.Status.ACTIVE)
            .values_list("pk", flat=True)
        )
        for note in notes:
            item_ids = _shown_item_ids(reading, note.item_ids)
            if note.op != "confirm" and note.type not in reading.switch.types:
                continue
            if note.op == "add":
                self._write(type_name=note.type, text=note.text, item_ids=item_ids, confidence=note.confidence)
                continue
            if note.target_id not in active:
                continue
            active.discard(note.target_id)
            target = reading.records[note.target_id]
            if note.op == "confirm":
                self._write(type_name=target.type, text=target.text, item_ids=item_ids)
            else:
                self._write(
                    type_name=note.type, text=note.text, item_ids=item_ids, confidence=note.confidence, replaces=target.id
                )

    def episodes(self, notes: list[EpisodeNote]) -> None:
        """One episode per session asked for; a note is matched to its session by
        its first or last item, and a session's second note is ignored."""
        reading = self.reading
        positions = {item.id: item.position for item in reading.items}
        unwritten = list(reading.sessions or [])
        for note in notes:
            ends = [positions[item_id] for item_id in (note.first_item_id, note.last_item_id) if item_id in positions]
            session = next(
                (each for each in unwritten if any(each["first_position"] <= end <= each["last_position"] for end in ends)), None
            )
            if session is None:
                continue
            unwritten.remove(session)
            items = list(
                Item.objects.for_organisation(reading.switch.organisation_id)
                .filter(thread_id=reading.thread.pk, position__gte=session["first_position"], position__lte=session["last_position"])
                .order_by("position")
            )
            response_ids = {item.response_id for item in items if item.response_id}
            responses = list(
                Response.objects.for_organisation(reading.switch.organisation_id)
                .filter(pk__in=response_ids)
                .select_related("agent_version")
            )
            self._write(
                type_name=EPISODE,
                text=note.text,
                item_ids=[session["first_item_id"], session["last_item_id"]],
                structured=episode_structured(thread_id=reading.thread.pk, items=items, responses=responses, note=note),
            )

    def lessons(self, notes: list[LessonNote]) -> None:
        """At most three per session read, of the session's person only. Hers in the
        same words already (memory's write confirms it), or in nearly the same words
        where the index embeds (her near-duplicate lesson's own text is written: confirmed)."""
        reading = self.reading
        if not reading.lessons_asked:
            return
        for note in notes[: MAX_LESSONS_PER_SESSION * len(reading.sessions)]:
            near = lesson_near_duplicate(index=reading.index, subject=reading.thread.subject, text=note.text)
            self._write(
                type_name=LESSON,
                text=near.text if near is not None else note.text,
                item_ids=_shown_item_ids(reading, note.item_ids),
                metadata={"lesson.kind": note.kind, "lesson.basis": note.basis},
                # Model-written judgement about how she works, like a store lesson.
                trusted=False,
            )


class WindowRunner(WorkRunner):
    unit_model = ExtractionWindow
    run_model = ExtractionRun
    noun = "window"
    events = "extraction.window"
    done_status = ExtractionWindow.Status.READY
    max_attempts = MAX_ATTEMPTS
    related = ("switch__connector", "switch__index", "switch__organisation", "thread")
    write_failures = ((PermissionDenied, "write_denied"), (Conflict, "write_conflict"), (ApplicationError, INVALID_MODEL_OUTPUT))
    counted_fields = ("written", "confirmed", "replaced")

    def lease(self) -> timedelta:
        return window_lease()

    def owner(self, unit: ExtractionWindow, now: datetime) -> ExtractionSwitch | None:
        """The switch while it is active: `"enabled": false` stops its windows until it is on again."""
        return unit.switch if switch_state(switch=unit.switch, now=now) == SwitchState.ACTIVE else None

    def prepare(self, unit: ExtractionWindow, owner: ExtractionSwitch, now: datetime) -> _Reading:
        return _reading_prepare(window=unit, now=now)

    def asks(self, prepared: _Reading) -> bool:
        return bool(prepared.messages)

    def limit_reached(self, unit: ExtractionWindow, owner: ExtractionSwitch, now: datetime) -> bool:
        return token_limit_reached(organisation=owner.organisation, at=now)

    def ask(self, unit: ExtractionWindow, owner: ExtractionSwitch, prepared: _Reading, now: datetime):
        episodes, lessons = prepared.sessions is not None, prepared.lessons_asked
        try:
            return structured_answer_read(
                # Looked up here, at the call: a test stands in for the model call by replacing it.
                complete=structured_completion,
                read=partial(extraction_answer_read, episodes=episodes, lessons=lessons),
                placeholders=prepared.placeholders,
                organisation=owner.organisation,
                model=owner.model,
                name=SCHEMA_NAME,
                schema=extraction_schema(types=owner.types, episodes=episodes, lessons=lessons),
                messages=prepared.messages,
                now=prepared.now,
            )
        except UnusableAnswer as error:
            raise WorkFailed(error.code, error.message, usage=error.usage) from error

    def write(self, unit: ExtractionWindow, prepared: _Reading, answer, now: datetime) -> Mapping[str, int]:
        """The answer's records, episodes and lessons."""
        writer = _Writer(prepared)
        writer.records(answer.records)
        writer.episodes(answer.episodes)
        writer.lessons(answer.lessons)
        return {"written": writer.written, "confirmed": writer.confirmed, "replaced": writer.replaced}

    def counted(self, unit: ExtractionWindow, end: End) -> None:
        """Inside the end's transaction: a failed window is told to the organisation's webhook
        subscribers (its ids and error code)."""
        super().counted(unit, end)
        if end.status == FAILED:
            webhook_event_emit(
                caller=Caller.system(organisation_id=unit.organisation_id, actor=EXTRACTION_ACTOR),
                kind="extraction.window.failed",
                subject=unit.thread.subject,
                data={"window_id": unit.id, "index_id": unit.switch_id, "thread_id": unit.thread_id, "subject": unit.thread.subject, "error_code": end.code},
            )

    def outcome(self, unit_id: str, unit: ExtractionWindow | None, end: End | None) -> WindowOutcome:
        index_id = unit.switch_id if unit is not None else None
        if end is None:
            return WindowOutcome(window_id=unit_id, index_id=index_id, status="skipped")
        counts = {name: end.counts.get(name, 0) for name in self.counted_fields}
        return WindowOutcome(window_id=unit_id, index_id=index_id, status=end.status, error_code=end.code, **counts)


RUNNER = WindowRunner()


def extraction_window_run(*, window_id: str, now: datetime | None = None) -> WindowOutcome:
    """Reads one window if it is there to be read (the module's docstring). Safe to call for
    any window any number of times, from any number of workers: only a claim reads."""
    return RUNNER.run(unit_id=window_id, now=now)


def person_windows_erase(*, caller: Caller, subject: str) -> int:
    """Removes the windows of her threads (part of erasing her, core_memory.flows.erasure);
    answers how many. Call it before her records are erased: a window being written holds its
    row, so this waits for its records. A run that was waiting for one of them no longer does.
    Her threads, and the switches' cursors on them, go after (threads.services)."""
    windows = ExtractionWindow.objects.for_organisation(caller.organisation_id).filter(thread__subject=subject)
    return work_erased(windows, runs=ExtractionRun.objects.for_organisation(caller.organisation_id), now=timezone.now())
