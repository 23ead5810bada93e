"""Mixed traffic at rising concurrency (issue 12): where p95 passes 100 ms, with no error and no lost write.

    make bench BENCH=bench/load.py                                    # the 1M store
    make bench BENCH=bench/load.py BENCH_ARGS="--records 100000 --clients 1,4,16 --seconds 5 --no-results"
    make bench BENCH=bench/load.py BENCH_ARGS="--hybrid"                 # searches hybrid (the index embeds)
    make bench BENCH=bench/load.py BENCH_ARGS="--replicas 0,1"           # again with a streaming replica

Loopback only, bounded: gunicorn as `make run` starts it (the Procfile's web line) on a
seeded store (bench/seed.py), and an instant fake chat model in a process of its own. At
each step `clients` clients each send their next request as soon as the last one is
answered, for `--seconds` after a second of warm-up (and `--warmup` seconds of the mix before the
first step): 35% `POST /v1/memory/search`, 35%
`POST /v1/responses` (a turn with its memory block), 30% `POST /v1/memory` — persons drawn
as the other benches draw them. Each step reports the throughput and the latencies; every
non-2xx answer or broken connection counts as an error, and every write answered 200/201 is
looked up in the database afterwards (a write answered but not found would be lost).

With `--replicas 0,1` the steps run once on the primary alone and once more with a streaming
replica (`DATABASE_REPLICA_URLS`): a standby made with `pg_basebackup -R` from the bench's
server, on the same machine, which searches, blocks and lists then read from
(core_memory.base.replicas). The rows say how many of the record table's scans each server ran.

Prints the table and writes it into bench/RESULTS.md under "Load".
"""
from __future__ import annotations

import argparse
import contextlib
import asyncio
import json
import multiprocessing
import random
import time
from dataclasses import dataclass, field
from datetime import datetime

import harness  # noqa: F401 — sets Django up, so the project's imports come after it
from client import Api, Server, percentile
from corpus import query_text, record_text, turn_input
from seed import SIZES, seeded_store
from speed import MODEL_ID, bench_writes_remove, hybrid_on, load_average, machine, results_write

from django.conf import settings
from django.db import connection

from memory.models import MemoryRecord
from tests.fake_model import FakeChatModel

MIX = (("search", 35), ("turn", 35), ("write", 30))
THRESHOLD_MS = 100.0


@dataclass
class Step:
    clients: int
    seconds: float
    replicas: int = 0
    latencies: dict[str, list[float]] = field(default_factory=lambda: {kind: [] for kind, _ in MIX})
    errors: int = 0
    error_examples: list[str] = field(default_factory=list)
    written: set[str] = field(default_factory=set)
    missing: int = 0
    # Scans of the record table (sequential and by index) each server ran during the step.
    primary_scans: int = 0
    replica_scans: int = 0

    @property
    def all_latencies(self) -> list[float]:
        return [value for values in self.latencies.values() for value in values]

    @property
    def throughput(self) -> float:
        return len(self.all_latencies) / self.seconds

    def row(self) -> str:
        every = self.all_latencies
        kinds = " | ".join(f"{percentile(self.latencies[kind], 0.95):.0f}" if self.latencies[kind] else "—" for kind, _ in MIX)
        scans = f"{self.replica_scans / max(1, self.replica_scans + self.primary_scans):.0%}" if self.replicas else "—"
        return (
            f"| {self.replicas} | {self.clients} | {self.throughput:.0f} | {percentile(every, 0.5):.1f} | {percentile(every, 0.95):.1f} | "
            f"{percentile(every, 0.99):.1f} | {kinds} | {scans} | {self.errors} | {len(self.written):,} | {self.missing} |"
        )


def _serve_model(port_out) -> None:
    """The fake chat model in a process of its own: the load's client does not slow its answers."""
    with FakeChatModel() as model:
        port_out.send(model.config(MODEL_ID))
        while True:
            time.sleep(3600)


async def _run_step(api: Api, store, step: Step, generator: random.Random) -> None:
    persons = store.person_sample(generator, 200_000)
    kinds = random.Random(step.clients).choices([kind for kind, _ in MIX], weights=[weight for _, weight in MIX], k=200_000)
    counter = iter(range(len(persons)))
    warm_until = time.monotonic() + 1.0
    stop_at = warm_until + step.seconds

    async def one(number: int) -> None:
        kind, person = kinds[number], persons[number]
        if kind == "search":
            call = api.call("POST", "/v1/memory/search", {"index_id": store.index_id, "query": query_text(generator)}, subject=person)
        elif kind == "turn":
            call = api.call("POST", "/v1/responses", {"model": MODEL_ID, "input": turn_input(generator), "user": person})
        else:
            body = {"index_id": store.index_id, "type": "fact", "text": record_text(generator, "fact")}
            call = api.call("POST", "/v1/memory", body, subject=person)
        try:
            answer = await call
        except OSError as error:
            if time.monotonic() >= warm_until:
                step.errors += 1
                step.error_examples.append(f"{kind}: {error!r}")
            return
        ok = answer.status < 300 and (kind != "turn" or answer.json().get("status") == "completed")
        if kind == "write" and answer.status in (200, 201):
            step.written.add(answer.json()["memory_id"])
        if answer.started < warm_until or answer.started + answer.seconds > stop_at:
            return
        if not ok:
            step.errors += 1
            step.error_examples.append(f"{kind}: {answer.status} {answer.body[:200]!r}")
        step.latencies[kind].append(answer.seconds * 1000)

    async def client() -> None:
        while time.monotonic() < stop_at:
            await one(next(counter))

    await asyncio.gather(*(client() for _ in range(step.clients)))


def run(store, *, clients: list[int], seconds: float, warmup: float = 0.0, replicas: int = 0) -> list[Step]:
    generator = random.Random(7)
    receive, send = multiprocessing.Pipe(duplex=False)
    connection.close()  # nothing of the database crosses into the model's process
    model_process = multiprocessing.get_context("fork").Process(target=_serve_model, args=(send,), daemon=True)
    model_process.start()
    steps = []
    try:
        model = receive.recv()
        with _replica(store, replicas) as standby:
            environment = {"CORE_MODELS": json.dumps([model])}
            if standby is not None:
                environment["DATABASE_REPLICA_URLS"] = standby.url(store.database)
            with Server(database=store.database, environment=environment) as server:
                api = Api(host="127.0.0.1", port=server.port, secret=store.secret)
                if warmup:
                    # A server that has run a while: each web process has read the words' matches
                    # of the shared set it keeps (memory.search.shared) and its other per-process caches.
                    asyncio.run(_run_step(api, store, Step(clients=2, seconds=warmup), generator))
                for count in clients:
                    step = Step(clients=count, seconds=seconds, replicas=replicas)
                    scans_before = _record_scans(standby)
                    asyncio.run(_run_step(api, store, step, generator))
                    step.primary_scans, step.replica_scans = (after - before for after, before in zip(_record_scans(standby), scans_before))
                    found = set(MemoryRecord.objects.unscoped().filter(id__in=step.written).values_list("id", flat=True))
                    step.missing = len(step.written - found)
                    steps.append(step)
                    print(step.row(), flush=True)
                    if step.errors:
                        print("  e.g.", "; ".join(step.error_examples[:3]), flush=True)
                    if percentile(step.all_latencies, 0.95) > THRESHOLD_MS * 3:
                        break  # far past the threshold: more clients would only queue
    finally:
        model_process.kill()
    return steps


@contextlib.contextmanager
def _replica(store, replicas: int):
    """A streaming replica of the bench's server (the embedded one), removed afterwards."""
    if not replicas:
        yield None
        return
    if replicas != 1:
        raise SystemExit("--replicas: 0 or 1")
    from tests.faults.processes import Standby

    host = settings.DATABASES["default"]["HOST"]
    if not str(host).startswith("/"):
        raise SystemExit("--replicas 1 makes its standby from the embedded PostgreSQL (a Unix socket)")
    started = time.monotonic()
    standby = Standby(primary_socket_dir=host).create()
    print(f"  a standby made with pg_basebackup in {time.monotonic() - started:.0f} s", flush=True)
    try:
        yield standby
    finally:
        standby.remove()


_SCANS = "SELECT coalesce(sum(seq_scan + coalesce(idx_scan, 0)), 0) FROM pg_stat_user_tables WHERE relname = 'memory_memoryrecord'"


def _record_scans(standby) -> tuple[int, int]:
    """Scans of the record table so far on the primary and on the replica (statistics are
    flushed within a second: waited for)."""
    time.sleep(1.2)
    with connection.cursor() as cursor:
        cursor.execute(_SCANS)
        primary = cursor.fetchone()[0]
    replica = standby.sql(_SCANS, database=connection.settings_dict["NAME"])[0][0] if standby is not None else 0
    return int(primary), int(replica)


def _verdict(steps: list[Step]) -> str:
    under = [step for step in steps if percentile(step.all_latencies, 0.95) <= THRESHOLD_MS]
    over = next((step for step in steps if percentile(step.all_latencies, 0.95) > THRESHOLD_MS), None)
    if over is None:
        return f"p95 stayed under {THRESHOLD_MS:.0f} ms up to {steps[-1].clients} clients ({steps[-1].throughput:.0f} requests/s)."
    if under:
        best = max(under, key=lambda step: step.throughput)
        return (
            f"p95 passes {THRESHOLD_MS:.0f} ms between {best.clients} clients ({best.throughput:.0f} requests/s, p95 "
            f"{percentile(best.all_latencies, 0.95):.0f} ms) and {over.clients} ({over.throughput:.0f} requests/s, p95 "
            f"{percentile(over.all_latencies, 0.95):.0f} ms): about {best.throughput:.0f} requests/s of this mix stay under it."
        )
    return f"p95 was over {THRESHOLD_MS:.0f} ms from the first step ({steps[0].clients} clients)."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=SIZES["1m"], help="the seeded store's size")
    parser.add_argument("--clients", default="1,2,4,8,12,16,24,32", help="concurrent clients per step, ascending")
    parser.add_argument("--seconds", type=float, default=10.0, help="measured seconds per step")
    parser.add_argument("--no-results", action="store_true", help="print only; leave bench/RESULTS.md alone")
    parser.add_argument("--replicas", default="0", help="comma-separated: 0 (the primary alone), 1 (with one streaming replica)")
    parser.add_argument("--warmup", type=float, default=20.0, help="seconds of the mix at 2 clients before the first step, not measured")
    parser.add_argument(
        "--hybrid", action="store_true",
        help="the index embeds meanwhile: searches and blocks use the seeded vectors, writes enqueue their embedding (no worker runs)",
    )
    arguments = parser.parse_args()
    store = seeded_store(arguments.records)
    started_at, load_before = datetime.now().astimezone(), load_average()
    header = [
        "| replicas | clients | requests/s | p50 ms | p95 ms | p99 ms | search p95 | turn p95 | write p95 | record scans on the replica | errors | writes answered | writes lost |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    print("\n".join(header), flush=True)
    try:
        with hybrid_on(store) if arguments.hybrid else contextlib.nullcontext():
            steps = []
            for replicas in [int(count) for count in arguments.replicas.split(",")]:
                steps += run(
                    store, clients=[int(count) for count in arguments.clients.split(",")], seconds=arguments.seconds,
                    warmup=arguments.warmup, replicas=replicas,
                )
    finally:
        bench_writes_remove(store)
    verdicts = [
        f"{'With one replica' if replicas else 'The primary alone'}: {_verdict([step for step in steps if step.replicas == replicas])}"
        for replicas in sorted({step.replicas for step in steps})
    ]
    errors, lost = sum(step.errors for step in steps), sum(step.missing for step in steps)
    section = [
        "### Load: mixed traffic at rising concurrency",
        "",
        f"Run {started_at:%Y-%m-%d %H:%M %Z} on the {store.records:,}-record store by `make bench BENCH=bench/load.py`. "
        f"Machine: {machine()}. Load average before: {load_before}; after: {load_average()}. The load's client and the "
        "fake model run on the same 2 cores as the server and the database.",
        "",
        f"35% {'hybrid ' if arguments.hybrid else 'full-text '}search, 35% turns, 30% writes; closed loop, {arguments.seconds:.0f} s per step after 1 s of warm-up "
        f"({arguments.warmup:.0f} s of the mix at 2 clients before the first step, not measured).",
        "",
        *header,
        *[step.row() for step in steps],
        "",
        *[f"**{verdict}**" for verdict in verdicts],
        f"{errors} errors and {lost} lost writes in the whole run.",
    ]
    print("\n".join(section))
    if not arguments.no_results:
        results_write(section, name="load")


if __name__ == "__main__":
    main()
