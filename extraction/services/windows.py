"""Reading one window (R-8.3, R-8.4, R-8.8–R-8.11, R-13.1, R-12.4).

1. Claim: a conditional UPDATE moves the window to `running` with a fresh token and a
   lease, if it is queued or its last claim ran out. Whoever does not win leaves it alone.
2. Check what would make reading pointless before paying for it: the key it runs under
   (`threads`, the write right), the organisation's monthly limit (`parked`), the thread's
   read rule and redaction (R-8.8).
3. Ask the model — outside any transaction — and read its answer whole; a bad answer fails
   the window with `invalid_model_output` before anything is written.
4. Write: in one transaction that first locks the window by its token, every record,
   episode and lesson is written through memory's services, and the window becomes `ready`
   with its counts. A worker killed before this commits wrote nothing; one whose claim ran
   out finds its token gone and writes nothing (another worker has the window).
"""
from __future__ import annotations

import logging
import uuid
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

from django.db import transaction
from django.utils import timezone

from core_memory.base.errors import ApplicationError, Conflict, PermissionDenied
from core_memory.base.tenancy import organisation_id_of
from core_memory.base.work import run_counted, work_claim, work_locked
from core_memory.keys.models import ApiKey
from core_memory.llm.metering import token_limit_reached
from core_memory.llm.protocol import ProviderError, TokenCount
from core_memory.llm.structured import INVALID_MODEL_OUTPUT, InvalidModelOutput, structured_completion
from core_memory.organisations.models import Organisation
from core_memory.pii.placeholders import Placeholders, RedactionError
from core_memory.pii.selectors import ReadMode, thread_read_mode
from core_memory.pii.services import thread_texts_redact
from core_memory.threads.models import Item, Response, Thread
from extraction.answer import EpisodeNote, ExtractionAnswer, LessonNote, RecordNote, extraction_answer_read
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
from memory.services import RecordWriteResult, record_write_within
from stores.models import KnowledgeIndex
from stores.selectors import index_find_available

logger = logging.getLogger(__name__)

# The person's records shown to the model, most recently changed first.
MAX_RECORDS_SHOWN = 1000
EPISODE = "episode"
LESSON = "lesson"


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


class _WindowFailed(Exception):
    def __init__(self, code: str, message: str, *, usage: TokenCount | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.usage = usage or TokenCount()


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


def _claim(*, window_id: str, clock: datetime) -> uuid.UUID | None:
    """The conditional UPDATE that makes this attempt the window's only reader, or None."""
    return work_claim(ExtractionWindow.objects.unscoped(), pk=window_id, clock=clock, lease=window_lease())


def _run_count(*, run_id: str | None, organisation_id: str, now: datetime, done: int = 1, **counts: int) -> None:
    """`done` of the run's windows are finished: the run's counters rise, and its last window closes it."""
    run_counted(ExtractionRun.objects.for_organisation(organisation_id), run_id=run_id, now=now, done=done, **counts)


def _locked(*, window: ExtractionWindow, token: uuid.UUID) -> ExtractionWindow | None:
    """The window, locked, while this attempt's claim holds; None when it is no longer ours
    (the lease ran out and another worker took it, or the window was erased with its person)."""
    return work_locked(ExtractionWindow.objects.for_organisation(window.organisation_id), pk=window.pk, token=token)


def _finish(
    window: ExtractionWindow, *, status: str, usage: TokenCount, now: datetime, code: str = "", message: str = "", **counts: int
) -> None:
    """The locked window's end (ready, failed or parked), counted into its run."""
    window.status = status
    window.error_code = code
    window.error_message = message[:500]
    window.written, window.confirmed, window.replaced = (counts.get(name, 0) for name in ("written", "confirmed", "replaced"))
    window.input_tokens += usage.input_tokens
    window.output_tokens += usage.output_tokens
    window.claim_token = window.lease_until = None
    window.finished_at = timezone.now()
    window.save()
    failed, parked = status == ExtractionWindow.Status.FAILED, status == ExtractionWindow.Status.PARKED
    _run_count(run_id=window.run_id, organisation_id=window.organisation_id, now=now, errors=int(failed), parked=int(parked), **counts)


@transaction.atomic(durable=True)
def _window_close(
    *, window: ExtractionWindow, token: uuid.UUID, status: str, code: str = "", message: str = "", usage: TokenCount, now: datetime
) -> bool:
    """A window that ends without writing (failed or parked); False when it is no longer this attempt's."""
    locked = _locked(window=window, token=token)
    if locked is None:
        return False
    _finish(locked, status=status, usage=usage, now=now, code=code, message=message)
    return True


def _author(*, switch: ExtractionSwitch) -> tuple[ApiKey, KnowledgeIndex]:
    """The key the switch runs under, and its index as that key sees it. A key that lost
    `threads` or the right to write the index fails the window (R-8.6: the switch stays active)."""
    keys = ApiKey.objects.for_organisation(switch.organisation_id).select_related("organisation")
    key = keys.filter(pk=switch.author_key_id).first()
    if key is None:  # deleted since the switch's state was read
        raise _WindowFailed("author_unavailable", "The key the switch runs under no longer exists.")
    if not key.has_capability("threads"):
        raise _WindowFailed("threads_capability_missing", "The key the switch runs under lacks the capability 'threads'.")
    index = index_find_available(key=key, index_id=switch.index_id)
    if index is None or not key.has_capability("memory") or not key.may_write(index.pk):
        raise _WindowFailed("write_denied", "The key the switch runs under may not write this store.")
    return key, index


def _sessions_asked(*, switch: ExtractionSwitch, window: ExtractionWindow) -> list[dict] | None:
    """The sessions whose episodes this window asks for (R-8.10): those ending in it that came
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
    thread that names nobody), with ids, so the model can confirm and correct (R-8.4). Read
    as plain rows: a thousand model instances would cost more than the rest of the window."""
    rows = (
        MemoryRecord.objects.for_organisation(switch.organisation_id)
        .filter(index_id=switch.index_id, subject=thread.subject, type__in=switch.types, status=MemoryRecord.Status.ACTIVE)
        .order_by("-changed_at", "-id")
        .values_list("id", "type", "text")[:MAX_RECORDS_SHOWN]
    )
    return {row[0]: ShownRecord(*row) for row in rows}


def _redacted(*, thread: Thread, texts: list[str]) -> tuple[list[str], Placeholders]:
    """R-8.8: the texts as the model may see them, and the placeholders to restore its answer with."""
    mode = thread_read_mode(thread=thread)
    if mode == ReadMode.NEVER:
        raise _WindowFailed("pii_redaction_failed", "This thread held redacted values before threads were marked; it is never read.")
    if mode == ReadMode.AS_WRITTEN:
        return texts, Placeholders()
    try:
        redaction = thread_texts_redact(thread=thread, texts=texts)
    except RedactionError as error:
        raise _WindowFailed(error.code, "Personal data could not be redacted; the window was not sent.") from error
    return redaction.texts, redaction.placeholders


def _reading_prepare(*, window: ExtractionWindow, now: datetime) -> tuple[_Reading, list[dict]]:
    """What the window shows the model, and the messages that show it (none when the window
    holds nothing to read: only reasoning or sealed items)."""
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
        # asked in the same call as the episodes; a thread that names nobody gets none.
        lessons_asked=switch.lessons and sessions is not None and thread.subject is not None,
        placeholders=Placeholders(),
        now=now,
    )
    if not readable:
        return reading, []
    reading.records = _records_shown(switch=switch, thread=thread)
    texts = [switch.instructions] + [item_text(item) for item in readable] + [record.text for record in reading.records.values()]
    texts, reading.placeholders = _redacted(thread=thread, texts=texts)
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
    if sessions is not None:
        session_fields = [{name: each[name] for name in ("first_item_id", "last_item_id", "from", "to")} for each in sessions]
    messages = extraction_messages(
        instructions=instructions,
        types=switch.types,
        items=shown_items,
        records=shown_records,
        sessions=session_fields,
        lessons=reading.lessons_asked,
    )
    return reading, messages


def _ask(*, reading: _Reading, messages: list[dict]) -> tuple[ExtractionAnswer, TokenCount]:
    switch = reading.switch
    episodes, lessons = reading.sessions is not None, reading.lessons_asked
    try:
        answer = structured_completion(
            organisation=switch.organisation,
            model=switch.model,
            name=SCHEMA_NAME,
            schema=extraction_schema(types=switch.types, episodes=episodes, lessons=lessons),
            messages=messages,
            now=reading.now,
        )
    except InvalidModelOutput as error:
        raise _WindowFailed(INVALID_MODEL_OUTPUT, error.message, usage=error.usage) from error
    except ProviderError as error:
        raise _WindowFailed("model_error", f"{error.code}: {error.message}") from error
    try:
        data = reading.placeholders.restore(answer.data)
        return extraction_answer_read(data, episodes=episodes, lessons=lessons), answer.usage
    except InvalidModelOutput as error:
        raise _WindowFailed(INVALID_MODEL_OUTPUT, error.message, usage=answer.usage) from error


def _shown_item_ids(reading: _Reading, item_ids: list[str]) -> list[str]:
    """Ids the request did not show are ignored (R-13)."""
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
        reading = self.reading
        result = record_write_within(
            key=reading.key,
            index=reading.index,
            subject=reading.thread.subject,
            type=type_name,
            text=text,
            source=MemoryRecord.Source.EXTRACTION,
            provenance={"thread_id": reading.thread.pk, "item_ids": item_ids, "response_id": _response_of(reading, item_ids)},
            actor=self.actor,
            now=reading.now,
            **fields,
        )
        if result.status == "confirmed":
            self.confirmed += 1
        else:
            self.written += 1
            self.replaced += result.status == "corrected"
        return result

    def records(self, notes: list[RecordNote]) -> None:
        """add / confirm / correct (R-8.4). An add or a correction of a type outside the
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
        """One episode per session asked for (R-8.10); a note is matched to its session by
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
        """At most three per session read (R-8.11), of the session's person only. Hers in the
        same words already (memory's write confirms it, R-5.4), or in nearly the same words
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


@transaction.atomic(durable=True)
def _answer_write(*, reading: _Reading, token: uuid.UUID, answer: ExtractionAnswer, usage: TokenCount) -> WindowOutcome | None:
    """The answer's records, episodes and lessons and the window's `ready`, in one
    transaction; None, with nothing written, when the window is no longer this attempt's."""
    window = _locked(window=reading.window, token=token)
    if window is None:
        return None
    writer = _Writer(reading)
    writer.records(answer.records)
    writer.episodes(answer.episodes)
    writer.lessons(answer.lessons)
    counts = {"written": writer.written, "confirmed": writer.confirmed, "replaced": writer.replaced}
    _finish(window, status=ExtractionWindow.Status.READY, usage=usage, now=reading.now, **counts)
    return WindowOutcome(window_id=window.pk, index_id=window.switch_id, status=window.status, **counts)


def _skipped(window_id: str, index_id: str | None = None) -> WindowOutcome:
    return WindowOutcome(window_id=window_id, index_id=index_id, status="skipped")


def extraction_window_run(*, window_id: str, now: datetime | None = None) -> WindowOutcome:
    """Reads one window if it is there to be read (the module's docstring). Safe to call for
    any window any number of times, from any number of workers: only a claim reads."""
    clock = timezone.now()
    now = now or clock
    window = (
        ExtractionWindow.objects.unscoped()
        .select_related("switch__connector", "switch__index", "switch__organisation", "thread")
        .filter(pk=window_id)
        .first()
    )
    if window is None or window.status not in (ExtractionWindow.Status.QUEUED, ExtractionWindow.Status.RUNNING):
        return _skipped(window_id, window.switch_id if window else None)
    if switch_state(switch=window.switch, now=now) != SwitchState.ACTIVE:
        # It waits, queued, until its switch is active again (R-8.1: "enabled": false stops it).
        return _skipped(window_id, window.switch_id)
    token = _claim(window_id=window_id, clock=clock)
    if token is None:
        return _skipped(window_id, window.switch_id)
    window.refresh_from_db(fields=["attempts", "run"])
    usage = TokenCount()
    try:
        if window.attempts > MAX_ATTEMPTS:
            raise _WindowFailed("attempts_exhausted", f"The window was claimed {MAX_ATTEMPTS} times without finishing.")
        reading, messages = _reading_prepare(window=window, now=now)
        if messages and token_limit_reached(organisation=window.switch.organisation, at=now):
            if not _window_close(window=window, token=token, status=ExtractionWindow.Status.PARKED, usage=usage, now=now):
                return _skipped(window_id, window.switch_id)
            logger.info("extraction.window.parked", extra={"window": window_id, "organisation": window.organisation_id})
            return WindowOutcome(window_id=window_id, index_id=window.switch_id, status=ExtractionWindow.Status.PARKED)
        answer = ExtractionAnswer(records=[], episodes=[], lessons=[])
        if messages:
            answer, usage = _ask(reading=reading, messages=messages)
        try:
            outcome = _answer_write(reading=reading, token=token, answer=answer, usage=usage)
        except PermissionDenied as error:
            raise _WindowFailed("write_denied", error.message, usage=usage) from error
        except Conflict as error:
            raise _WindowFailed("write_conflict", error.message, usage=usage) from error
        except ApplicationError as error:
            # The service refused a value of the answer: the answer was not of the shape.
            raise _WindowFailed(INVALID_MODEL_OUTPUT, error.message, usage=usage) from error
    except _WindowFailed as failure:
        closed = _window_close(
            window=window,
            token=token,
            status=ExtractionWindow.Status.FAILED,
            code=failure.code,
            message=failure.message,
            usage=failure.usage,
            now=now,
        )
        logger.warning("extraction.window.failed", extra={"window": window_id, "code": failure.code})
        if not closed:
            return _skipped(window_id, window.switch_id)
        failed = ExtractionWindow.Status.FAILED
        return WindowOutcome(window_id=window_id, index_id=window.switch_id, status=failed, error_code=failure.code)
    if outcome is None:
        logger.warning("extraction.window.claim_lost", extra={"window": window_id})
        return _skipped(window_id, window.switch_id)
    logger.info(
        "extraction.window.ready",
        extra={"window": window_id, "written": outcome.written, "confirmed": outcome.confirmed, "replaced": outcome.replaced},
    )
    return outcome


def person_windows_erase(*, organisation: Organisation | str, subject: str) -> int:
    """Removes the windows of her threads (part of erasing her, core_memory.flows.erasure);
    answers how many. Call it before her records are erased: a window being written holds its
    row, so this waits for its records. A run that was waiting for one of them no longer does.
    Her threads, and the switches' cursors on them, go after (threads.services)."""
    windows = ExtractionWindow.objects.for_organisation(organisation).filter(thread__subject=subject)
    unfinished = Counter(
        windows.filter(status__in=[ExtractionWindow.Status.QUEUED, ExtractionWindow.Status.RUNNING], run__isnull=False)
        .values_list("run_id", flat=True)
    )
    _, deleted = windows.delete()
    for run_id, count in unfinished.items():
        _run_count(run_id=run_id, organisation_id=organisation_id_of(organisation), now=timezone.now(), done=count)
    return deleted.get(ExtractionWindow._meta.label, 0)
