"""What one maintenance run costs (SPEC §9, issue 9): time, queries and model calls, on stores of
different sizes with a share of their records changed since the last run.

Runs against a scratch database on the configured server (created and dropped here, nothing
else is touched) with a fake helper model that answers at once:

    DATABASE_URL=... .venv/bin/python bench/maintenance_cost.py [--rows 10000:1,100000:1,100000:0.1]

Each row is a store of its own with every analysis on — contested marking, store lessons
(`min_episodes` 3) and promotion — seeded with COPY: persons of 90 records each (facts,
preferences, a few episodes), and a tenth of the store shared. The seeded store counts as read
(its maintenance clock is set as if a run had just finished); then the given percentage of its
records changes — half new records of existing persons, a third re-worded, the rest new
episodes — and one run reads it, as `run_maintenance --store` does: planning, then every job.

"Core's time" is the run's wall time minus the time inside the model provider's `complete`
(the HTTP round trip to the fake model). The model finds one contradiction in every request,
judges nothing general knowledge, and writes a lesson when asked.
"""
from __future__ import annotations

import argparse
import json
import logging
import random
import time
from datetime import timedelta

from harness import MODEL_SECONDS, model_time_measured, scratch_database  # sets Django up first

from django.db import connection
from django.test.utils import override_settings
from django.utils import timezone

from core_memory.organisations.models import Organisation
from maintenance.models import MaintenanceState
from maintenance.services.jobs import maintenance_job_run
from maintenance.services.planning import maintenance_dispatch
from memory.models import MemoryRecord
from memory.services.rules import text_normalise
from stores.models import MemoryStore
from tests.factories import make_index
from tests.fake_model import FakeChatModel, completion

RECORDS_PER_PERSON = 90
SHARED_SHARE = 0.1
CITIES = "Delft Leiden Utrecht Gouda Haarlem Zwolle Breda Tilburg Arnhem Assen".split()
TOPICS = "facturen offertes lunch parkeren reiskosten verlof rooster thuiswerken laptops contracten".split()
DAYS = "maandag dinsdag woensdag donderdag vrijdag".split()


def _text(generator: random.Random, number: int, *, shared: bool) -> tuple[str, str]:
    """(type, text): a realistic spread, so that textual closeness finds some pairs and not all."""
    topic, city, day = generator.choice(TOPICS), generator.choice(CITIES), generator.choice(DAYS)
    if shared:
        return "fact", f"{topic.capitalize()} voor team {number % 40} gaan op {day} via kantoor {city} ({number})."
    kind = generator.random()
    if kind < 0.5:
        return "fact", f"Werkt op {day} in {city} aan {topic} ({number})."
    if kind < 0.9:
        return "preference", f"Wil {topic} liefst op {day} geregeld ({number})."
    return "episode", f"Wilde {topic} regelen op {day}; gelukt ({number})."


def _seed(*, index, size: int, generator: random.Random) -> list[str]:
    """`size` records by COPY; answers the persons' subjects."""
    shared = int(size * SHARED_SHARE)
    persons = [f"person-{number}" for number in range((size - shared) // RECORDS_PER_PERSON + 1)]
    now = timezone.now() - timedelta(days=1)
    columns = (
        "id", "organisation_id", "index_id", "subject", "type", "text", "normalised_text", "metadata", "confidence", "status",
        "confirmations", "contested", "retrieval_count", "source", "trusted", "item_ids", "done", "structured", "changed_at",
        "created_at", "updated_at",
    )
    with connection.cursor() as cursor, cursor.copy(f"COPY memory_memoryrecord ({', '.join(columns)}) FROM STDIN") as copy:
        for number in range(size):
            is_shared = number < shared
            type_name, text = _text(generator, number, shared=is_shared)
            structured = json.dumps({"result": "succeeded", "intent": text}) if type_name == "episode" else None
            copy.write_row((
                f"mem_bench{index.pk[-8:]}{number:08d}", index.organisation_id, index.pk,
                None if is_shared else persons[(number - shared) // RECORDS_PER_PERSON], type_name, text, text_normalise(text),
                "{}", 1.0, "active", 0, False, 0, "api", True, "[]", False, structured, now, now, now,
            ))
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memory_memoryrecord")
    return persons


def _change(*, index, persons: list[str], count: int, generator: random.Random) -> None:
    """`count` records change: half new facts and preferences, a third re-worded, the rest new episodes."""
    added, reworded = count // 2, count // 3
    episodes = count - added - reworded
    now = timezone.now()
    new = []
    for number in range(added + episodes):
        topic, city, day = generator.choice(TOPICS), generator.choice(CITIES), generator.choice(DAYS)
        if number >= added:
            type_name, text, structured = "episode", f"Wilde {topic} regelen op {day}; gelukt (nieuw {number}).", {"result": "succeeded"}
        elif number % 2:
            type_name, text, structured = "fact", f"Werkt op {day} in {city} aan {topic} (nieuw {number}).", None
        else:
            type_name, text, structured = "preference", f"Wil {topic} liefst op {day} geregeld (nieuw {number}).", None
        new.append(
            MemoryRecord(
                organisation_id=index.organisation_id, index=index, subject=generator.choice(persons), type=type_name, text=text,
                normalised_text=text_normalise(text), changed_at=now, structured=structured,
            )
        )
    MemoryRecord.objects.bulk_create(new)
    victims = list(
        MemoryRecord.objects.filter(index=index, subject__isnull=False, type="fact", created_at__lt=now)
        .order_by("?")
        .values_list("id", "text")[:reworded]
    )
    for record_id, text in victims:
        reworded_text = text.replace("Werkt", "Werkte")
        MemoryRecord.objects.filter(pk=record_id).update(text=reworded_text, normalised_text=text_normalise(reworded_text), updated_at=now)


def _answer(request_body: dict) -> dict:
    name = request_body["response_format"]["json_schema"]["name"]
    data = json.loads(request_body["messages"][-1]["content"])
    usage = (len(request_body["messages"][-1]["content"]) // 4, 20)
    if name == "core_contradictions":
        return completion(json.dumps({"contradictions": data["pairs"][:1]}), usage=usage)
    if name == "core_store_lesson":
        return completion(json.dumps({"lesson": "Regel offertes in een keer."}), usage=usage)
    return completion(json.dumps({"general": []}), usage=usage)


def measure(*, model: FakeChatModel, size: int, percent: float, generator: random.Random) -> dict:
    organisation = Organisation.objects.create(name=f"bench {size}", capabilities=["improvements"], improvements={"enabled": True})
    index = make_index(organisation)
    MemoryStore.objects.filter(index=index).update(
        lessons={"enabled": True, "min_episodes": 3}, promotion={"enabled": True, "labels": {}}
    )
    persons = _seed(index=index, size=size, generator=generator)
    read = timezone.now()
    MaintenanceState.objects.create(
        index=index, organisation=organisation, contested_through=read, lessons_through=read, promotion_through=read
    )
    changed = int(size * percent / 100)
    _change(index=index, persons=persons, count=changed, generator=generator)

    requests = len(model.requests)
    MODEL_SECONDS.clear()
    queries = []

    def counted(execute, sql, params, many, context):
        queries.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(counted):
        started = time.perf_counter()
        dispatch = maintenance_dispatch(index_ids=[index.pk])
        planned = time.perf_counter()
        outcomes = [maintenance_job_run(job_id=job_id) for job_id in dispatch.job_ids]
        finished = time.perf_counter()
    (plan,) = dispatch.plans
    return {
        "size": size,
        "changed": changed,
        "read": plan.changed,
        "jobs": len(outcomes),
        "calls": len(model.requests) - requests,
        "queries": len(queries),
        "planning_ms": (planned - started) * 1000,
        "core_ms": (finished - started - sum(MODEL_SECONDS)) * 1000,
        "marked": sum(outcome.written for outcome in outcomes if outcome.kind == "contradictions"),
        "lessons": sum(outcome.written for outcome in outcomes if outcome.kind == "store_lesson"),
        "failed": sum(outcome.status == "failed" for outcome in outcomes),
    }


def main() -> None:
    for quiet in ("maintenance", "core_memory.llm"):
        logging.getLogger(quiet).setLevel(logging.WARNING)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", default="10000:1,100000:1,100000:0.1", help="store size:percent changed, comma-separated")
    arguments = parser.parse_args()
    rows = [(int(size), float(percent)) for size, percent in (row.split(":") for row in arguments.rows.split(","))]

    model_time_measured()
    generator = random.Random(9)
    with scratch_database("bench_maintenance_cost") as scratch:
        print(f"scratch database {scratch}; every analysis on; the fake helper model answers at once\n")
        with FakeChatModel(default=_answer) as model, override_settings(CORE_MODELS=[model.config("bench-helper")], CORE_HELPER_MODEL="bench-helper"):
            print(
                f"{'records':>8} | {'changed':>7} | {'read':>5} | {'jobs':>5} | {'model calls':>11} | {'queries':>7} | "
                f"{'planning ms':>11} | {'Core ms':>8} | {'ms/changed':>10} | marked, lessons"
            )
            print(f"{'-' * 8}-+-{'-' * 7}-+-{'-' * 5}-+-{'-' * 5}-+-{'-' * 11}-+-{'-' * 7}-+-{'-' * 11}-+-{'-' * 8}-+-{'-' * 10}-+-{'-' * 15}")
            for size, percent in rows:
                row = measure(model=model, size=size, percent=percent, generator=generator)
                assert row["failed"] == 0, row
                print(
                    f"{row['size']:>8} | {row['changed']:>7} | {row['read']:>5} | {row['jobs']:>5} | {row['calls']:>11} | "
                    f"{row['queries']:>7} | {row['planning_ms']:>11.0f} | {row['core_ms']:>8.0f} | "
                    f"{row['core_ms'] / max(row['changed'], 1):>10.1f} | {row['marked']}, {row['lessons']}"
                )


if __name__ == "__main__":
    main()
