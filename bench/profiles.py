"""Where one request's time goes, and what the block's and the search's queries read (issue 12).

    make bench BENCH=bench/profiles.py                                   # the 1M store
    make bench BENCH=bench/profiles.py BENCH_ARGS="--records 10000 --no-results"

On a seeded store (bench/seed.py), in process through Django's whole request path (the test
client: every middleware, DRF, the view): for each kind of request, `--requests` of them
after a warm-up under pyinstrument, each sample's time put in one bucket by the innermost
frame that names one — SQL (the database round trip, psycopg), authentication,
idempotency, audit, serialisation (DRF serializers and rendering), ORM (building queries,
making model objects), the framework (Django and DRF around the view) or our own code —
and the call tree of the heaviest paths. Then EXPLAIN (ANALYZE, BUFFERS) of every query of
one injection block and one search, each with the index it used and the rows it read
against the rows it returned.

Prints it all and writes it into bench/RESULTS.md under "Profiles and plans".
"""
from __future__ import annotations

import argparse
import json
import random
import time
from collections import Counter
from datetime import datetime
from pathlib import Path

import harness  # noqa: F401 — sets Django up, so the project's imports come after it
from corpus import query_text, record_text, turn_input
from pyinstrument import Profiler
from seed import SIZES, seeded_store
from speed import bench_writes_remove, load_average, machine, results_write

from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext, override_settings
from django.utils import timezone

from core_memory.keys.authentication import caller_for_secret
from core_memory.base.callers import Caller
from memory.injection.walk import injection_block_build
from memory.search import record_search
from stores.selectors import index_find_available
from tests.fake_model import FakeChatModel

SECTION = "profiles"
# Bucket of a frame by its file, most specific first; the innermost frame that matches wins.
BUCKETS = (
    ("SQL (round trip)", ("django/db/backends/utils.py", "/psycopg/")),
    ("authentication", ("core_memory/keys/authentication.py",)),
    ("idempotency", ("core_memory/base/api/idempotency.py",)),
    ("audit", ("/audit/",)),
    ("serialisation", ("rest_framework/serializers.py", "rest_framework/fields.py", "rest_framework/renderers.py", "/json/")),
    ("ORM (queries, objects)", ("django/db/models/",)),
    ("framework (Django, DRF)", ("/django/", "/rest_framework/", "/simple_history/", "/whitenoise/")),
)
OWN = "our code"
# Our code is what runs from this checkout, outside its virtual environment and the benches.
PROJECT = str(Path(__file__).resolve().parent.parent)


def _bucket(stack: list[str]) -> str:
    for frame in reversed(stack):
        path = frame.split("\x00")[1] if "\x00" in frame else ""
        for name, markers in BUCKETS:
            if any(marker in path for marker in markers):
                return name
        if path.startswith(PROJECT) and "/.venv/" not in path and "/bench/" not in path:
            return OWN
    return "other"


def profile_requests(store, *, requests: int) -> list[str]:
    generator = random.Random(3)
    persons = store.person_sample(generator, requests + 20)
    client = Client(HTTP_AUTHORIZATION=f"Bearer {store.secret}")
    lines = []
    with FakeChatModel() as model, override_settings(CORE_MODELS=[model.config("bench-chat")], CORE_RATE_LIMIT_PER_MINUTE=10**9):
        kinds = {
            "`GET /v1/indexes`": lambda n: client.get("/v1/indexes"),
            "`POST /v1/memory/search`": lambda n: client.post(
                "/v1/memory/search", {"index_id": store.index_id, "query": query_text(generator)},
                content_type="application/json", HTTP_X_CORE_SUBJECT=persons[n],
            ),
            "`POST /v1/memory`": lambda n: client.post(
                "/v1/memory", {"index_id": store.index_id, "type": "fact", "text": record_text(generator, "fact")},
                content_type="application/json", HTTP_X_CORE_SUBJECT=persons[n],
            ),
            "`POST /v1/memory` with `Idempotency-Key`": lambda n: client.post(
                "/v1/memory", {"index_id": store.index_id, "type": "fact", "text": record_text(generator, "fact")},
                content_type="application/json", HTTP_X_CORE_SUBJECT=persons[n], HTTP_IDEMPOTENCY_KEY=f"bench-{time.time_ns()}",
            ),
            "`POST /v1/responses`": lambda n: client.post(
                "/v1/responses", {"model": "bench-chat", "input": turn_input(generator), "user": persons[n]},
                content_type="application/json",
            ),
        }
        summary = ["| request | ms per request (wall) | " + " | ".join(name for name, _ in BUCKETS) + f" | {OWN} |",
                   "| --- | ---: |" + " ---: |" * (len(BUCKETS) + 1)]
        trees = []
        for label, call in kinds.items():
            for number in range(20):
                assert call(number).status_code < 300
            profiler = Profiler(interval=0.0002)
            profiler.start()
            started = time.perf_counter()
            for number in range(requests):
                response = call(number % len(persons))
                assert response.status_code < 300, response.content[:300]
            wall = (time.perf_counter() - started) * 1000 / requests
            profiler.stop()
            session = profiler.last_session
            shares: Counter[str] = Counter()
            for stack, seconds in session.frame_records:
                shares[_bucket(stack)] += seconds
            total = sum(shares.values()) or 1.0
            cells = [f"{shares[name] / total:.0%}" for name, _ in BUCKETS] + [f"{shares[OWN] / total:.0%}"]
            summary.append(f"| {label} | {wall:.1f} | " + " | ".join(cells) + " |")
            print(summary[-1], flush=True)
            text = profiler.output_text(unicode=False, color=False, show_all=False, time="percent_of_total")
            trees += [f"{label}:", "", "```", *_trimmed(text), "```", ""]
    return [*summary, "", "<details><summary>Call trees (pyinstrument, share of the requests' time)</summary>", "", *trees, "</details>"]


def _trimmed(text: str, *, least: float = 3.0) -> list[str]:
    """The tree's lines whose share is at least `least` percent (the header dropped)."""
    kept = []
    for line in text.splitlines():
        stripped = line.lstrip(" |`-")
        share = stripped.split("%", 1)[0]
        try:
            if float(share) >= least:
                kept.append(line.rstrip())
        except ValueError:
            continue
    return kept


def _plan_summary(plan: dict) -> tuple[list[str], int, int, float]:
    """(indexes used, rows read by scans, rows returned, execution ms) of an EXPLAIN (FORMAT JSON)."""
    indexes, read = [], 0

    def walk(node: dict) -> None:
        nonlocal read
        if "Index Name" in node:
            indexes.append(node["Index Name"])
        if node["Node Type"] in ("Seq Scan", "Index Scan", "Index Only Scan", "Bitmap Heap Scan"):
            read += int(node.get("Actual Rows", 0) * node.get("Actual Loops", 1))
            read += int(node.get("Rows Removed by Filter", 0)) + int(node.get("Rows Removed by Index Recheck", 0))
        for child in node.get("Plans", ()):
            walk(child)

    root = plan["Plan"]
    walk(root)
    return sorted(set(indexes)), read, int(root.get("Actual Rows", 0)), plan["Execution Time"]


def explain(store, label: str, work) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        work()
    rows = ["| # | query | indexes | rows read | rows returned | ms |", "| ---: | --- | --- | ---: | ---: | ---: |"]
    plans = []
    for number, query in enumerate(captured.captured_queries, start=1):
        sql = query["sql"]
        if not sql.lstrip().upper().startswith(("SELECT", "(SELECT")):
            continue
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql)
            plan = cursor.fetchone()[0]
            plan = json.loads(plan) if isinstance(plan, str) else plan
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + sql)
            text = "\n".join(row[0] for row in cursor.fetchall())
        indexes, read, returned, milliseconds = _plan_summary(plan[0])
        rows.append(f"| {number} | {_what(sql)} | {', '.join(indexes) or '—'} | {read:,} | {returned:,} | {milliseconds:.2f} |")
        plans += [f"{number}. `{sql[:160]}…`", "", "```", text, "```", ""]
    return [f"{label}:", "", *rows, "", "<details><summary>Plans</summary>", "", *plans, "</details>", ""]


def _what(sql: str) -> str:
    """A few words naming the query."""
    upper = sql.upper()
    if "TSVECTOR_TO_ARRAY" in upper:
        return "the words' lexemes"
    if "TS_RANK_CD" in upper:
        return "full-text ranking"
    if "COUNT(*)" in upper:
        return "count left out by `limit`"
    if "UNION ALL" in upper:
        return "open commitments, hers and shared"
    if "STORES_KNOWLEDGEINDEX" in upper:
        return "the index and its store"
    if "API_KEY" in upper:
        return "the credential"
    if "\"ID\" IN (" in upper or "\"ID\" = ANY" in upper:
        return "the hits' records"
    return "a section's page of records"


def plans(store) -> list[str]:
    generator = random.Random(4)
    key = caller_for_secret(store.secret).key
    index = index_find_available(caller=Caller(key=key), index_id=store.index_id)
    heaviest = max(store.persons, key=store.persons.get)
    typical = store.person_sample(generator, 1)[0]
    lines = []
    for person in (typical, heaviest):
        topic, query = turn_input(generator), query_text(generator)
        # Once before, so that what is read once per process (the words' lexemes) is read.
        caller = Caller(key=key, subject=person)
        injection_block_build(caller=caller, agent_version=None, topic=topic, now=timezone.now())
        record_search(caller=caller, index=index, query=query, now=timezone.now())
        records = store.persons[person]
        lines += explain(store, f"Injection block for a person with {records:,} records, topic “{topic}”", lambda: injection_block_build(
            caller=caller, agent_version=None, topic=topic, now=timezone.now()
        ))
        lines += explain(store, f"Search for the same person, query “{query}”", lambda: record_search(
            caller=caller, index=index, query=query, now=timezone.now()
        ))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=SIZES["1m"], help="the seeded store's size")
    parser.add_argument("--requests", type=int, default=200, help="profiled requests per kind")
    parser.add_argument("--no-results", action="store_true", help="print only; leave bench/RESULTS.md alone")
    arguments = parser.parse_args()
    store = seeded_store(arguments.records)
    started_at, load_before = datetime.now().astimezone(), load_average()
    try:
        profile_lines = profile_requests(store, requests=arguments.requests)
    finally:
        bench_writes_remove(store)
    plan_lines = plans(store)
    section = [
        "### Profiles and plans",
        "",
        f"Run {started_at:%Y-%m-%d %H:%M %Z} on the {store.records:,}-record store by `make bench BENCH=bench/profiles.py`. "
        f"Machine: {machine()}. Load average before: {load_before}; after: {load_average()}.",
        "",
        f"Where a request's time goes, in process through Django's whole request path, {arguments.requests} requests of each "
        "kind under pyinstrument (each sample counted once, in the innermost bucket on its stack; the profiler's own "
        "cost inflates the wall time):",
        "",
        *profile_lines,
        "",
        "What the block's and the search's queries read (EXPLAIN ANALYZE, BUFFERS), for a person drawn as the benches "
        "draw them and for the person with the most records:",
        "",
        *plan_lines,
    ]
    print("\n".join(section))
    if not arguments.no_results:
        results_write(section, name=SECTION)


if __name__ == "__main__":
    main()
