"""Core's own time per extraction window (SPEC §8): everything but the model call.

Runs against a scratch database on the configured server (created and dropped here,
nothing else is touched) with a fake model that answers at once:

    DATABASE_URL=... .venv/bin/python bench/extraction_overhead.py [--items 10,200] [--records 0,1000] [--windows 20]

For each row: `--windows` threads of one person, each one quiet session of `items` items
(a user message, an assistant answer, now and then a tool call and its result), and
`records` active records of hers that every request shows. One run plans them (a window
each) and reads every window with `extraction_window_run`, as a worker does. The model
answers each window with three new records, and — when she has records — a confirmation
and a correction of records it was shown, so the write side does its full work.

"Core's time" for a window is its wall time minus the time inside the model provider's
`complete` (the HTTP round trip to the model and reading its answer); planning is shown
per window beside it. With `--redacting` the threads are written by a `pii_redaction` key,
so every window is redacted before it is sent and its answer restored.
"""
from __future__ import annotations

import argparse
import json
import logging
import statistics
import time
from datetime import timedelta

from harness import MODEL_SECONDS, model_time_measured, scratch_database  # sets Django up first

from django.db import connection
from django.test.utils import override_settings
from django.utils import timezone

from core_memory.base.callers import Caller
from core_memory.threads.services import ItemDraft, thread_create, thread_items_append
from extraction.services.planning import extraction_switch_plan
from extraction.services.switches import extraction_switch_set
from extraction.services.windows import extraction_window_run
from memory.models import MemoryRecord
from memory.services.rules import text_normalise
from stores.selectors import index_get_available
from tests.factories import OrganisationFactory, make_index, make_key
from tests.fake_model import FakeChatModel, completion

SUBJECT = "anna"
WORDS = "invoice delivery meeting office budget contract report travel lunch project deadline customer".split()


def _drafts(items: int) -> list[ItemDraft]:
    drafts = []
    for number in range(items):
        word, day = WORDS[number % len(WORDS)], number % 28 + 1
        if number % 10 == 8:
            arguments = json.dumps({"q": word})
            drafts.append(ItemDraft(role="assistant", kind="tool_call", name="lookup", call_id=f"c{number}", content=arguments))
        elif number % 10 == 9:
            result = f"The {word} is due on day {day}. " * 20
            drafts.append(ItemDraft(role="tool", kind="tool_result", name="lookup", call_id=f"c{number - 1}", content=result))
        elif number % 2 == 0:
            text = f"Can you check the {word} for next week? Mail me at anna{number}@example.nl or call 06-1234567{number % 10}."
            drafts.append(ItemDraft(role="user", content=text))
        else:
            drafts.append(ItemDraft(role="assistant", content=f"I looked at the {word}: it is planned for day {day}, as you prefer."))
    return drafts


def _records(*, organisation, index, count: int) -> None:
    now = timezone.now()
    batch = []
    for number in range(count):
        subject_word, object_word = WORDS[number % len(WORDS)], WORDS[(number * 7) % len(WORDS)]
        text = f"Record {number}: the {subject_word} of {object_word} is handled on day {number % 28 + 1}."
        batch.append(
            MemoryRecord(
                organisation=organisation,
                index=index,
                subject=SUBJECT,
                type=("fact", "preference")[number % 2],
                text=text,
                normalised_text=text_normalise(text),
                changed_at=now - timedelta(seconds=number),
            )
        )
    MemoryRecord.objects.bulk_create(batch)


def _answer(request_body: dict) -> dict:
    """Three new records and, when she has records, one confirmation and one correction."""
    data = json.loads(request_body["messages"][-1]["content"])
    item_ids = [item["id"] for item in data["items"][:2]]
    operations = [
        {"op": "add", "type": "fact", "text": f"Learnt {number} from {item_ids[0]}.", "confidence": 0.8, "item_ids": item_ids}
        for number in range(3)
    ]
    if len(data["records"]) >= 2:
        first, second = data["records"][0], data["records"][1]
        operations.append({"op": "confirm", "target_id": first["id"], "item_ids": item_ids})
        corrected = f"{second['text']} Corrected in {item_ids[0]}."
        operations.append(
            {"op": "correct", "target_id": second["id"], "type": second["type"], "text": corrected, "confidence": 0.9, "item_ids": item_ids}
        )
    return completion(json.dumps({"records": operations}), usage=(len(request_body["messages"][-1]["content"]) // 4, 200))


def measure(*, model: FakeChatModel, items: int, records: int, windows: int, redacting: bool) -> tuple[list[float], float]:
    """(Core's milliseconds per window, planning milliseconds per window) for one row."""
    organisation = OrganisationFactory()
    index = make_index(organisation)
    key, _ = make_key(organisation, pii_redaction=redacting)
    extraction_switch_set(
        caller=Caller(key=key),
        index=index_get_available(caller=Caller(key=key), index_id=index.id),
        values={
            "enabled": True,
            "model": "bench-chat",
            "instructions": "",
            "types": ["fact", "preference"],
            "schedule_minutes": 60,
            "threads": "with_person",
            "episodes": False,
            "lessons": False,
            "filters": {"key_ids": [], "agent_ids": []},
        },
        sent={"enabled", "model"},
    )
    _records(organisation=organisation, index=index, count=records)
    start = timezone.now() - timedelta(hours=3)
    for _ in range(windows + 1):  # one more: the first window read is a warm-up
        thread = thread_create(caller=Caller(key=key, subject=SUBJECT))
        thread_items_append(thread=thread, caller=Caller(key=key), drafts=_drafts(items), now=start)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memory_memoryrecord; ANALYZE threads_item")

    started = time.perf_counter()
    plan = extraction_switch_plan(index_id=index.id, force=True)
    planning = (time.perf_counter() - started) * 1000 / len(plan.window_ids)
    assert len(plan.window_ids) == windows + 1, plan
    core = []
    for number, window_id in enumerate(plan.window_ids):
        MODEL_SECONDS.clear()
        started = time.perf_counter()
        outcome = extraction_window_run(window_id=window_id)
        elapsed = time.perf_counter() - started
        assert outcome.status == "ready", outcome
        if number:
            core.append((elapsed - sum(MODEL_SECONDS)) * 1000)
    return core, planning


def main() -> None:
    logging.getLogger("extraction").setLevel(logging.WARNING)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", default="10,200", help="items per window, comma-separated")
    parser.add_argument("--records", default="0,1000", help="records of the person shown to the model, comma-separated")
    parser.add_argument("--windows", type=int, default=20, help="measured windows per row")
    parser.add_argument("--redacting", action="store_true", help="threads of a pii_redaction key (every window redacted)")
    arguments = parser.parse_args()

    model_time_measured()
    with scratch_database("bench_extraction_overhead") as scratch:
        print(
            f"scratch database {scratch}, {arguments.windows} windows per row after one warm-up"
            f"{', redacting key' if arguments.redacting else ''}\n"
        )
        with FakeChatModel() as model, override_settings(CORE_MODELS=[model.config("bench-chat")], CORE_EXTRACTION_WINDOW_ITEMS=1000):
            model.respond(_answer, times=None)
            print(f"{'items':>5} | {'records':>7} | {'Core p50 ms':>11} | {'p90 ms':>7} | {'max ms':>7} | {'planning ms/window':>18}")
            print(f"{'-' * 5}-+-{'-' * 7}-+-{'-' * 11}-+-{'-' * 7}-+-{'-' * 7}-+-{'-' * 18}")
            for items in sorted(int(value) for value in arguments.items.split(",")):
                for records in sorted(int(value) for value in arguments.records.split(",")):
                    core, planning = measure(
                        model=model, items=items, records=records, windows=arguments.windows, redacting=arguments.redacting
                    )
                    p50, p90 = statistics.median(core), statistics.quantiles(core, n=10, method="inclusive")[8]
                    print(f"{items:>5} | {records:>7} | {p50:>11.1f} | {p90:>7.1f} | {max(core):>7.1f} | {planning:>18.1f}")


if __name__ == "__main__":
    main()
