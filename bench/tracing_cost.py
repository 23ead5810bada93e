"""What tracing costs the hot path: full-text searches through gunicorn with tracing off (nothing
configured), with tracing on (sampled, exported over OTLP/HTTP to a collector that takes and drops
the spans), and, with `--against`, another checkout (the previous main) beside them.

    make bench BENCH=bench/tracing_cost.py BENCH_ARGS="--against ../main-worktree"
    make bench BENCH=bench/tracing_cost.py BENCH_ARGS="--against ../main --sample 1.0"

The store is bench/small.py's (written once through the API and kept); the servers run side by
side on it and are measured in alternating rounds (ABBA…), so load from elsewhere on the machine
falls on all alike. Prints the table and writes it into bench/RESULTS.md under "Tracing's cost".
"""
from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import threading
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import harness  # noqa: F401 — sets Django up, so the project's imports come after it
from client import ROOT, Api, Server, percentile
from small import _commit, _searches, small_store
from speed import load_average, machine, results_write


class _Collector(BaseHTTPRequestHandler):
    """An OTLP/HTTP collector that takes every batch and keeps nothing: the exporter's work is
    real (encoding, sending), the collector's costs nothing here."""

    received = 0

    def do_POST(self):  # noqa: N802 — http.server's name
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        type(self).received += 1
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        return


def _collector() -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def measure(store, servers: list[tuple[str, Server]], *, rounds: int, per_round: int, warmup: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {label: [] for label, _server in servers}
    for _label, server in servers:
        server.__enter__()
    try:
        apis = {label: Api(host="127.0.0.1", port=server.port, secret=store.secret) for label, server in servers}
        for label, api in apis.items():
            asyncio.run(_searches(api, store, random.Random(label), warmup))
        order = [label for label, _server in servers]
        for number in range(rounds):
            for label in order if number % 2 == 0 else list(reversed(order)):
                times[label] += asyncio.run(_searches(apis[label], store, random.Random(1000 + number), per_round))
    finally:
        for _label, server in servers:
            server.__exit__(None, None, None)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--against", default=None, help="another checkout to measure beside this one (the previous main)")
    parser.add_argument("--sample", type=float, default=0.1, help="the share of traces sampled with tracing on")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--per-round", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--no-results", action="store_true", help="print only; leave bench/RESULTS.md alone")
    arguments = parser.parse_args()
    store = small_store(arguments.records, max(1, arguments.records // 100))
    collector = _collector()
    traced = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{collector.server_port}",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
        "OTEL_TRACES_SAMPLER_ARG": str(arguments.sample),
    }
    log = ROOT / "var" / "bench"
    servers = [
        ("tracing off", ROOT, Server(database=store.database, log=log / "gunicorn-tracing-off.log")),
        (f"tracing on, {arguments.sample:.0%} sampled", ROOT, Server(database=store.database, environment=traced, log=log / "gunicorn-tracing-on.log")),
    ]
    if arguments.against:
        other = Path(arguments.against).resolve()
        servers.insert(0, (f"{other.name} (before)", other, Server(database=store.database, root=other, log=log / "gunicorn-tracing-base.log")))
    started_at, load_before = datetime.now().astimezone(), load_average()
    times = measure(store, [(label, server) for label, _root, server in servers], rounds=arguments.rounds, per_round=arguments.per_round, warmup=arguments.warmup)
    collector.shutdown()
    rows = [
        f"| {label} | {_commit(root)} | {len(times[label]):,} | {percentile(times[label], 0.5):.1f} | {percentile(times[label], 0.95):.1f} | "
        f"{percentile(times[label], 0.99):.1f} | {statistics.fmean(times[label]):.1f} |"
        for label, root, _server in servers
    ]
    section = [
        "### Tracing's cost: full-text search through gunicorn",
        "",
        f"Run {started_at:%Y-%m-%d %H:%M %Z} by `make bench BENCH=bench/tracing_cost.py` on bench/small.py's store of "
        f"{store.records:,} records over {store.persons:,} persons; searches of 3 words as a person, one at a time; "
        f"{arguments.rounds} alternating rounds of {arguments.per_round} after {arguments.warmup} unmeasured. "
        f"Tracing on: OTLP/HTTP to a collector in the bench that drops what it gets ({_Collector.received} batches), "
        f"`parentbased_traceidratio` at {arguments.sample}. Machine: {machine()}. Load average before: {load_before}; after: {load_average()}.",
        "",
        "| server | commit | searches | p50 ms | p95 ms | p99 ms | mean ms |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
        *rows,
    ]
    print("\n".join(section), flush=True)
    if not arguments.no_results:
        results_write(section, name="tracing-cost")


if __name__ == "__main__":
    main()
