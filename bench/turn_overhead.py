"""How long a turn takes before its model call, as the store grows.

Runs against a scratch database on the configured server (created and dropped
here, nothing else is touched) with a fake model that answers at once:

    DATABASE_URL=... .venv/bin/python bench/turn_overhead.py [--sizes 0,1000,10000] [--turns 20]

"Before the model" is from the moment the request enters Django's test client to
the moment the fake model receives the chat completion request: authentication,
validation, the thread and response rows, the memory block (R-7.5) and the
message assembly. Records are split evenly between one person and the shared set.
"""
from __future__ import annotations

import argparse
import statistics
import time

from harness import scratch_database  # sets Django up, so the project's imports come after it

from django.db import connection
from django.test.utils import override_settings
from django.utils import timezone

from memory.models import MemoryRecord
from tests.factories import OrganisationFactory, client_for, make_index, make_key
from tests.fake_model import FakeChatModel

SUBJECT = "anna"
TYPES = ("fact", "preference", "fact", "commitment", "behaviour")
WORDS = "invoice delivery meeting office budget contract report travel lunch project deadline customer".split()


def records_add(*, organisation, index, start: int, stop: int) -> None:
    now = timezone.now()
    batch = []
    for number in range(start, stop):
        text = f"Record {number}: the {WORDS[number % len(WORDS)]} of {WORDS[(number * 7) % len(WORDS)]} is handled on day {number % 28 + 1}."
        batch.append(
            MemoryRecord(
                organisation=organisation,
                index=index,
                subject=SUBJECT if number % 2 else None,
                type=TYPES[number % len(TYPES)],
                text=text,
                normalised_text=text.lower().rstrip("."),
                confidence=0.5 + (number % 50) / 100,
                changed_at=now,
            )
        )
        if len(batch) == 2000:
            MemoryRecord.objects.bulk_create(batch)
            batch = []
    MemoryRecord.objects.bulk_create(batch)


def measure(*, client, model: FakeChatModel, turns: int) -> tuple[list[float], list[float]]:
    before_model, whole = [], []
    for number in range(turns + 1):
        started = time.monotonic()
        response = client.post(
            "/v1/responses",
            {"model": "bench-chat", "input": f"When is the {WORDS[number % len(WORDS)]} due?", "user": SUBJECT},
            format="json",
        )
        finished = time.monotonic()
        assert response.status_code == 200 and response.json()["status"] == "completed", response.content
        if number == 0:
            continue  # warm-up: connections, caches
        before_model.append((model.requests[-1].received_at - started) * 1000)
        whole.append((finished - started) * 1000)
    return before_model, whole


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="0,1000,10000", help="records in the store, comma-separated, ascending")
    parser.add_argument("--turns", type=int, default=20, help="measured turns per size")
    arguments = parser.parse_args()
    sizes = sorted(int(size) for size in arguments.sizes.split(","))

    with scratch_database("bench_turn_overhead") as scratch:
        print(f"scratch database {scratch}, {arguments.turns} turns per size after one warm-up\n")
        with FakeChatModel() as model, override_settings(CORE_MODELS=[model.config("bench-chat")]):
            organisation = OrganisationFactory()
            index = make_index(organisation)
            key, secret = make_key(organisation, memory={"injection": {"enabled": True, "index_id": index.id, "limit": 20}})
            client = client_for(secret)
            print(f"{'records':>8} | {'before model p50 ms':>19} | {'p90 ms':>7} | {'max ms':>7} | {'whole turn p50 ms':>17}")
            print(f"{'-' * 8}-+-{'-' * 19}-+-{'-' * 7}-+-{'-' * 7}-+-{'-' * 17}")
            present = 0
            for size in sizes:
                records_add(organisation=organisation, index=index, start=present, stop=size)
                present = max(present, size)
                with connection.cursor() as cursor:
                    cursor.execute("ANALYZE memory_memoryrecord")
                before_model, whole = measure(client=client, model=model, turns=arguments.turns)
                deciles = statistics.quantiles(before_model, n=10, method="inclusive")
                print(
                    f"{present:>8} | {statistics.median(before_model):>19.1f} | {deciles[8]:>7.1f} | "
                    f"{max(before_model):>7.1f} | {statistics.median(whole):>17.1f}"
                )


if __name__ == "__main__":
    main()
