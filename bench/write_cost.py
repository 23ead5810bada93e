"""What one single write costs, in process through Django's whole request path, this checkout
against others alternating (issue 33's "fewer statements and less Python per write").

    make bench BENCH=bench/write_cost.py BENCH_ARGS="--against ../main"

On the 10k store of bench/small.py (`bench_small_10k`, written first if missing): each checkout
runs in its own process (the test client: every middleware, DRF, the view, the commit), writes
`--per-round` records as one of the store's persons after a warm-up, and tells per write the
statements sent (`connection.execute_wrapper`), the Python function calls (cProfile, a separate
pass), its own CPU time and its PostgreSQL backend's CPU time (/proc of the backend). Rounds
alternate the checkouts (A B B A …) so load from elsewhere falls on both alike; the statement
and call counts do not depend on load, the CPU times only as ratios of the same run.

With `--sustained SECONDS`, instead: each checkout's server (gunicorn as the Procfile starts it,
side by side on the same database) takes single writes from 8 clients for that long, rounds
alternating; writes per second, their p95, and every answered id looked for in the database.

Prints the table; records nothing by itself (bench/RESULTS.md is written by hand).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _backend_cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def worker(root: Path, database: str, index_id: str, secret: str, count: int, seed: int) -> dict:
    """Runs in a process of its own with `root`'s code: `count` writes measured."""
    sys.path.insert(0, str(root))
    os.chdir(root)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "core_memory.settings")
    import cProfile
    import logging
    import pstats
    import random
    import time

    import django

    django.setup()
    logging.disable(logging.WARNING)
    from django.conf import settings
    from django.db import connection
    from django.test import Client
    from django.test.utils import override_settings

    connection.close()
    settings.DATABASES["default"]["NAME"] = database
    connection.settings_dict["NAME"] = database
    sys.path.insert(0, str(ROOT / "bench"))
    from small import text_of

    generator = random.Random(seed * 1_000_003 + time.time_ns())  # new texts: every write creates
    client = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    statements: list[str] = []
    created: list[bool] = []

    def counted(execute, sql, params, many, context):
        statements.append(sql)
        return execute(sql, params, many, context)

    def write() -> None:
        response = client.post(
            "/v1/memory", {"index_id": index_id, "type": generator.choice(("fact", "preference")), "text": text_of(generator)},
            content_type="application/json", HTTP_X_CORE_SUBJECT=f"persoon-{generator.randrange(100):03d}",
        )
        assert response.status_code in (200, 201), response.content[:300]
        created.append(response.status_code == 201)

    with override_settings(CORE_RATE_LIMIT_PER_MINUTE=10**9, CORE_RATE_LIMIT_BURST=10**9):
        for _ in range(20):
            write()
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            backend = cursor.fetchone()[0]
        with connection.execute_wrapper(counted):
            write()
        one_write = list(statements)
        statements.clear()
        backend_before, cpu_before, wall_before = _backend_cpu_seconds(backend), time.process_time(), time.perf_counter()
        with connection.execute_wrapper(counted):
            for _ in range(count):
                write()
        cpu = time.process_time() - cpu_before
        wall = time.perf_counter() - wall_before
        backend_cpu = _backend_cpu_seconds(backend) - backend_before
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(50):
            write()
        profile.disable()
        calls = pstats.Stats(profile).total_calls / 50
        if os.environ.get("WRITE_COST_PROFILE"):
            profile.dump_stats(os.environ["WRITE_COST_PROFILE"])
    return {
        "statements": len(statements) / count, "calls": calls, "python_ms": cpu * 1000 / count,
        "postgres_ms": backend_cpu * 1000 / count, "wall_ms": wall * 1000 / count, "created": sum(created) / len(created),
        "one_write": one_write,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", action="append", default=[], help="another checkout to measure beside this one (repeatable)")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--per-round", type=int, default=200)
    parser.add_argument("--show-statements", action="store_true", help="print one write's statements for each checkout")
    parser.add_argument("--sustained", type=float, default=0, help="seconds of 8 clients writing through gunicorn per round, instead")
    parser.add_argument("--worker", nargs=6, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.worker:
        root, database, index_id, secret, count, seed = arguments.worker
        print(json.dumps(worker(Path(root), database, index_id, secret, int(count), int(seed))))
        return

    sys.path.insert(0, str(ROOT / "bench"))
    import harness  # noqa: F401
    from small import small_store

    store = small_store(10_000, 100)
    checkouts = [("this checkout", ROOT)] + [(str(Path(other).resolve()), Path(other).resolve()) for other in arguments.against]
    if arguments.sustained:
        sustained(store, checkouts, rounds=arguments.rounds, seconds=arguments.sustained)
        return
    results: dict[str, list[dict]] = {label: [] for label, _root in checkouts}
    for number in range(arguments.rounds):
        order = checkouts if number % 2 == 0 else list(reversed(checkouts))
        for label, root in order:
            command = [sys.executable, __file__, "--worker", str(root), store.database, store.index_id, store.secret, str(arguments.per_round), str(number)]
            finished = subprocess.run(command, capture_output=True, text=True, check=False)
            if finished.returncode:
                raise RuntimeError(f"{label}: {finished.stderr[-3000:]}")
            results[label].append(json.loads(finished.stdout.strip().splitlines()[-1]))
            print(label, {name: round(value, 2) for name, value in results[label][-1].items() if name != "one_write"}, flush=True)
    print()
    print("| checkout | statements per write | Python calls per write | Python CPU ms (median round) | PostgreSQL CPU ms | wall ms |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for label, rounds in results.items():
        def median(name: str) -> float:
            return statistics.median(result[name] for result in rounds)
        print(f"| {label} | {median('statements'):.1f} | {median('calls'):,.0f} | {median('python_ms'):.2f} | {median('postgres_ms'):.2f} | {median('wall_ms'):.2f} |")
    if arguments.show_statements:
        for label, rounds in results.items():
            print(f"\n{label}:")
            for statement in rounds[-1]["one_write"]:
                print("  ", statement[:400])


def sustained(store, checkouts: list[tuple[str, Path]], *, rounds: int, seconds: float, clients: int = 8) -> None:
    import asyncio
    import random
    import time

    from client import Api, Server, percentile
    from small import text_of

    from memory.models import MemoryRecord

    async def writing(api: Api, generator: random.Random) -> list:
        answers = []
        stop_at = time.monotonic() + seconds

        async def client() -> None:
            while time.monotonic() < stop_at:
                body = {"index_id": store.index_id, "type": generator.choice(("fact", "preference")), "text": text_of(generator)}
                answers.append(await api.call("POST", "/v1/memory", body, subject=f"persoon-{generator.randrange(store.persons):03d}"))

        await asyncio.gather(*(client() for _ in range(clients)))
        return answers

    servers = [Server(database=store.database, root=root, log=ROOT / "var" / "bench" / f"gunicorn-writes-{number}.log") for number, (_label, root) in enumerate(checkouts)]
    for server in servers:
        server.__enter__()
    totals: dict[str, list] = {label: [] for label, _root in checkouts}
    try:
        apis = {label: Api(host="127.0.0.1", port=server.port, secret=store.secret) for (label, _root), server in zip(checkouts, servers)}
        for label, api in apis.items():
            asyncio.run(writing(api, random.Random(time.time_ns())))  # warm-up, not counted
        for number in range(rounds):
            for label, _root in checkouts if number % 2 == 0 else list(reversed(checkouts)):
                answers = asyncio.run(writing(apis[label], random.Random(time.time_ns())))
                totals[label].append(answers)
                print(label, f"round {number}: {len(answers) / seconds:.0f} writes/s", flush=True)
    finally:
        for server in servers:
            server.__exit__(None, None, None)
    print()
    print(f"| checkout | writes/s ({clients} clients, {rounds} rounds of {seconds:.0f} s) | p95 ms | failed | answered ids missing |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for label, rounds_answers in totals.items():
        answers = [answer for round_answers in rounds_answers for answer in round_answers]
        failed = [answer for answer in answers if answer.status not in (200, 201)]
        written = {answer.json()["memory_id"] for answer in answers if answer.status in (200, 201)}
        found = MemoryRecord.objects.unscoped().filter(id__in=written).count()
        rate = len(answers) / (seconds * len(rounds_answers))
        print(f"| {label} | {rate:.0f} | {percentile([answer.seconds * 1000 for answer in answers], 0.95):.1f} | {len(failed)} | {len(written) - found} of {len(written)} |")


if __name__ == "__main__":
    main()
