"""A new user's store through the API: 10,000 records over 100 persons, full-text search.

    make bench BENCH=bench/small.py                                          # this checkout
    make bench BENCH=bench/small.py BENCH_ARGS="--against ../main"            # and another checkout, alternating
    make bench BENCH=bench/small.py BENCH_ARGS="--records 100000"             # 100,000 records over 1,000 persons

The store a new user makes on the first day, and where a regression of the framework's or the
search's fixed costs shows before it drowns in the data: records written through
`POST /v1/memory`, 5% of them shared, the rest spread evenly over the persons, each text 5–14
words drawn from a vocabulary of 30 Dutch and English words (so every word matches many
records); searches of 3 such words as a person, one at a time, through gunicorn as the Procfile
starts it (2 workers × 4 threads). The store is written once by this checkout's code and kept
(`bench_small_<size>`, found again by its manifest under var/bench/).

With `--against DIR` (another checkout of Core, e.g. a worktree of the previous main) both
servers run on the same database at once and are measured in alternating rounds (ABBA), so that
load from elsewhere on the machine falls on both alike. The other checkout runs with this
checkout's Python and packages; its code must read this database's schema (migrations since
are additive).

Prints the table and writes it into bench/RESULTS.md under "A new user's store".
"""
from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import time
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

import harness  # noqa: F401 — sets Django up, so the project's imports come after it
from client import ROOT, Api, Server, percentile
from seed import database_use, manifest_path
from speed import load_average, machine, results_write

from django.core.management import call_command
from django.db import connection

from core_memory.base.callers import Caller
from core_memory.keys.services import key_create
from core_memory.organisations.models import Organisation
from stores.services import index_create

SEED_VERSION = 1
SHARED_SHARE = 0.05
VOCABULARY = (
    "factuur", "invoice", "klant", "customer", "vergadering", "meeting", "maandag", "monday", "offerte", "quote",
    "levering", "delivery", "betaling", "payment", "contract", "afspraak", "appointment", "kantoor", "office", "project",
    "rapport", "report", "telefoon", "phone", "prijs", "price", "korting", "discount", "planning", "week",
)
TYPES = ("fact", "preference", "commitment")
TARGET_P95_MS = 25.0


@dataclass
class SmallStore:
    database: str
    records: int
    persons: int
    seed_version: int
    index_id: str
    secret: str


def text_of(generator: random.Random) -> str:
    return " ".join(generator.choice(VOCABULARY) for _ in range(generator.randint(5, 14))).capitalize() + "."


def query_of(generator: random.Random) -> str:
    return " ".join(generator.sample(VOCABULARY, 3))


def small_store(records: int, persons: int, *, rebuild: bool = False) -> SmallStore:
    """The store of this size, written now through this checkout's API unless a current one exists."""
    name = f"bench_small_{records // 1000}k"
    path = manifest_path(name)
    if not rebuild and path.exists():
        store = SmallStore(**json.loads(path.read_text()))
        if store.seed_version == SEED_VERSION and (store.records, store.persons) == (records, persons):
            database_use(name)
            call_command("migrate", verbosity=0)
            return store
    started = time.monotonic()
    with connection._nodb_cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        cursor.execute(f'CREATE DATABASE "{name}"')
    database_use(name)
    call_command("migrate", verbosity=0)
    organisation = Organisation.objects.create(name="Nieuwe gebruiker", timezone="Europe/Amsterdam")
    index = index_create(organisation=organisation, caller=Caller.system(organisation_id=organisation.id, actor="bench"), name="klanten")
    _key, secret = key_create(
        organisation=organisation, caller=Caller.system(organisation_id=organisation.id, actor="bench"), name="bench", capabilities=["knowledge", "memory"], policy={"read": ["*"], "write": ["*"]}
    )
    store = SmallStore(database=name, records=records, persons=persons, seed_version=SEED_VERSION, index_id=index.id, secret=secret)
    with Server(database=name) as server:
        asyncio.run(_write(Api(host="127.0.0.1", port=server.port, secret=secret), store))
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE memory_memoryrecord")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(asdict(store)))
    print(f"{name}: {records:,} records written through the API in {time.monotonic() - started:.0f} s", flush=True)
    return store


async def _write(api: Api, store: SmallStore, clients: int = 8) -> None:
    generator = random.Random(store.records)
    shared = round(store.records * SHARED_SHARE)
    writes = [(None if number < shared else f"persoon-{number % store.persons:03d}", generator.choice(TYPES), text_of(generator)) for number in range(store.records)]
    generator.shuffle(writes)
    pending = iter(writes)

    async def client() -> None:
        for subject, type_name, text in pending:
            answer = await api.call("POST", "/v1/memory", {"index_id": store.index_id, "type": type_name, "text": text}, subject=subject)
            if answer.status not in (200, 201):
                raise RuntimeError(f"a write failed: {answer.status} {answer.body[:200]!r}")

    await asyncio.gather(*(client() for _ in range(clients)))


async def _searches(api: Api, store: SmallStore, generator: random.Random, count: int) -> list[float]:
    times = []
    for _ in range(count):
        person = f"persoon-{generator.randrange(store.persons):03d}"
        answer = await api.call("POST", "/v1/memory/search", {"index_id": store.index_id, "query": query_of(generator)}, subject=person)
        if answer.status != 200:
            raise RuntimeError(f"a search failed: {answer.status} {answer.body[:200]!r}")
        times.append(answer.seconds * 1000)
    return times


def measure(store: SmallStore, checkouts: list[tuple[str, Path]], *, rounds: int, per_round: int, warmup: int) -> dict[str, list[float]]:
    """Each checkout's search times, in alternating rounds (A B B A …) on servers running side by side."""
    times: dict[str, list[float]] = {label: [] for label, _root in checkouts}
    servers = [Server(database=store.database, root=root, log=ROOT / "var" / "bench" / f"gunicorn-small-{label}.log") for label, root in checkouts]
    for server in servers:
        server.__enter__()
    try:
        apis = {label: Api(host="127.0.0.1", port=server.port, secret=store.secret) for (label, _root), server in zip(checkouts, servers)}
        for label, api in apis.items():
            asyncio.run(_searches(api, store, random.Random(label), warmup))
        order = [label for label, _root in checkouts]
        for number in range(rounds):
            generator_seed = 1000 + number
            for label in order if number % 2 == 0 else list(reversed(order)):
                # The same questions for each checkout in a round.
                times[label] += asyncio.run(_searches(apis[label], store, random.Random(generator_seed), per_round))
    finally:
        for server in servers:
            server.__exit__(None, None, None)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--persons", type=int, default=None, help="default: a hundred records a person")
    parser.add_argument("--against", action="append", default=[], help="another checkout to measure beside this one (repeatable)")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--per-round", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=200, help="searches each server answers before the rounds, not measured")
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--no-results", action="store_true", help="print only; leave bench/RESULTS.md alone")
    arguments = parser.parse_args()
    store = small_store(arguments.records, arguments.persons or max(1, arguments.records // 100), rebuild=arguments.rebuild)
    checkouts = [("this checkout", ROOT)] + [(Path(path).resolve().name, Path(path).resolve()) for path in arguments.against]
    started_at, load_before = datetime.now().astimezone(), load_average()
    times = measure(store, checkouts, rounds=arguments.rounds, per_round=arguments.per_round, warmup=arguments.warmup)
    rows = [
        f"| {label} | {_commit(root)} | {len(times[label]):,} | {percentile(times[label], 0.5):.1f} | {percentile(times[label], 0.95):.1f} | "
        f"{percentile(times[label], 0.99):.1f} | {statistics.fmean(times[label]):.1f} |"
        for label, root in checkouts
    ]
    section = [
        "### A new user's store: full-text search through gunicorn",
        "",
        f"Run {started_at:%Y-%m-%d %H:%M %Z} by `make bench BENCH=bench/small.py` on {store.records:,} records over "
        f"{store.persons:,} persons ({SHARED_SHARE:.0%} shared), texts of 5–14 words from {len(VOCABULARY)} Dutch and English words, "
        f"searches of 3 of them as a person, one at a time; {arguments.rounds} alternating rounds of {arguments.per_round} after "
        f"{arguments.warmup} unmeasured. Machine: {machine()}. Load average before: {load_before}; after: {load_average()}.",
        "",
        "| checkout | commit | searches | p50 ms | p95 ms | p99 ms | mean ms |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
        *rows,
        "",
        f"Target: p95 ≤ {TARGET_P95_MS:.0f} ms through gunicorn.",
    ]
    print("\n".join(section), flush=True)
    if not arguments.no_results:
        results_write(section, name=f"small-{store.records // 1000}k")


def _commit(root: Path) -> str:
    import subprocess

    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True).stdout.strip()


if __name__ == "__main__":
    main()
