"""What redacting personal data (R-8.8) costs: detection per KB of text, and a turn's time
before its model call with and without `pii_redaction`, as the thread's history grows.

Runs against a scratch database on the configured server (created and dropped here,
nothing else is touched) with a fake model that answers at once:

    DATABASE_URL=... .venv/bin/python bench/pii_redaction.py [--histories 0,50,200] [--turns 20]

The history is made of the labelled chat messages of the PII tests (about one in three
holds personal data), so the redacting turn detects, numbers and restores real values.
"Before the model" is from the request entering Django's test client to the fake model
receiving the chat completion request.
"""
from __future__ import annotations

import argparse
import statistics
import time

from harness import scratch_database  # sets Django up, so the project's imports come after it

from django.test.utils import override_settings

from core_memory.base.callers import Caller
from core_memory.pii.detection import findings_in
from core_memory.threads.models import Item
from core_memory.threads.services import ItemDraft, thread_create, thread_items_append
from tests.core_memory.pii.labelled import COMPATIBILITY, COMPATIBILITY_CLEAN, DEVELOPMENT, HOLD_OUT, WRITINGS, parsed
from tests.factories import OrganisationFactory, client_for, make_index, make_key
from tests.fake_model import FakeChatModel

SUBJECT = "anna"
MESSAGES = [parsed(raw)[0] for raw in DEVELOPMENT + HOLD_OUT + WRITINGS + COMPATIBILITY + COMPATIBILITY_CLEAN]


def detection_per_kilobyte(repeats: int) -> tuple[float, float]:
    """Median and 90th percentile milliseconds to search 1 KB of chat (messages joined)."""
    text, position = "", 0
    while len(text.encode()) < 1024:
        text += MESSAGES[position % len(MESSAGES)] + " "
        position += 1
    text = text.encode()[:1024].decode(errors="ignore")
    timings = []
    for _ in range(repeats + 5):
        started = time.perf_counter()
        findings_in(text)
        timings.append((time.perf_counter() - started) * 1000)
    timings = timings[5:]
    return statistics.median(timings), statistics.quantiles(timings, n=10, method="inclusive")[8]


def thread_with_history(*, key, items: int) -> str:
    thread = thread_create(caller=Caller(key=key, subject=SUBJECT))
    drafts = [
        ItemDraft(role=Item.Role.USER if number % 2 == 0 else Item.Role.ASSISTANT, content=MESSAGES[number % len(MESSAGES)])
        for number in range(items)
    ]
    for start in range(0, len(drafts), 100):
        thread_items_append(thread=thread, caller=Caller(key=key), drafts=drafts[start : start + 100])
    return thread.id


def before_model(*, clients: dict, model: FakeChatModel, turns: int) -> dict[object, list[float]]:
    """Turns taken in turn on each client's thread, so that load on a shared machine weighs on both alike."""
    timings: dict[object, list[float]] = {name: [] for name in clients}
    for number in range(turns + 1):
        for name, (client, thread_id) in clients.items():
            started = time.monotonic()
            response = client.post(
                "/v1/responses",
                {"model": "bench-chat", "input": MESSAGES[number % len(MESSAGES)], "thread_id": thread_id},
                format="json",
            )
            assert response.status_code == 200 and response.json()["status"] == "completed", response.content
            if number:  # the first is a warm-up: connections, caches
                timings[name].append((model.requests[-1].received_at - started) * 1000)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--histories", default="0,50,200", help="items on the thread before the turns, comma-separated")
    parser.add_argument("--turns", type=int, default=20, help="measured turns per history and key")
    arguments = parser.parse_args()

    median, p90 = detection_per_kilobyte(repeats=200)
    print(f"detection, 1 KB of chat: p50 {median:.2f} ms, p90 {p90:.2f} ms (200 runs)\n")

    with scratch_database("bench_pii_redaction") as scratch:
        print(f"scratch database {scratch}, {arguments.turns} turns per row after one warm-up; the model answers 'ok'\n")
        with FakeChatModel() as model, override_settings(CORE_MODELS=[model.config("bench-chat")]):
            organisation = OrganisationFactory()
            index = make_index(organisation)
            memory = {"injection": {"enabled": True, "index_id": index.id}}
            keys = {redacts: make_key(organisation, memory=memory, pii_redaction=redacts) for redacts in (False, True)}
            print(f"{'history items':>13} | {'plain p50 ms':>12} | {'redacting p50 ms':>16} | {'p90 ms':>7} | {'added p50 ms':>12}")
            print(f"{'-' * 13}-+-{'-' * 12}-+-{'-' * 16}-+-{'-' * 7}-+-{'-' * 12}")
            for history in sorted(int(size) for size in arguments.histories.split(",")):
                clients = {
                    redacts: (client_for(secret, subject=SUBJECT), thread_with_history(key=key, items=history))
                    for redacts, (key, secret) in keys.items()
                }
                results = before_model(clients=clients, model=model, turns=arguments.turns)
                plain, redacting = statistics.median(results[False]), statistics.median(results[True])
                p90 = statistics.quantiles(results[True], n=10, method="inclusive")[8]
                print(f"{history:>13} | {plain:>12.1f} | {redacting:>16.1f} | {p90:>7.1f} | {redacting - plain:>12.1f}")


if __name__ == "__main__":
    main()
