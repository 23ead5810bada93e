"""The product-shaped set (bench/product_set.py) through the public API: R@1, R@5 and MRR.

    .venv/bin/python bench/product.py            # make bench-relevance runs it after LoCoMo

Every record is written by `POST /v1/memory` at its own time (its user as the person, or none
for the organisation's shared rules) into two indexes, one searched by full text and one with
`embeddings: true` (vectors by `manage.py embed_records`); every question is asked by
`POST /v1/memory/search` as its user on 2 November 2026. Scored: the rank of the one record
that answers it (R@1, R@5, mean reciprocal rank over the first 20), for the training users
(1, 3, 5) and the held-out ones (2, 4, 6), by the record's type, for questions in the other
language and for questions naming a time.
"""
from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Callable
from io import StringIO

from harness import api_post, clock_at, scratch_database  # sets Django up; the project's imports come after it

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from core_memory.flows.onboarding import organisation_create  # noqa: E402
from product_set import ASKED_AT, Question, Record, product_set  # noqa: E402
from tests.factories import client_for  # noqa: E402

LIMIT = 20


def product_load(*, records: list[Record], secret: str, index_ids: dict[str, str]) -> dict[str, dict[str, str]]:
    """Every record written to every index at its time; answers index mode → record id → set key."""
    keys: dict[str, dict[str, str]] = {mode: {} for mode in index_ids}
    clients: dict[str | None, object] = {}
    for record in records:
        client = clients.setdefault(record.user, client_for(secret, subject=record.user))
        for mode, index_id in index_ids.items():
            with clock_at(record.at):
                answer = api_post(client, "/v1/memory", {"index_id": index_id, "type": record.type, "text": record.text}, expect=(201,))
            keys[mode][answer["memory_id"]] = record.key
    return keys


def product_ask(*, questions: list[Question], secret: str, index_id: str, keys: dict[str, str]) -> tuple[list[dict], list[float]]:
    rows, latencies = [], []
    clients: dict[str, object] = {}
    for question in questions:
        client = clients.setdefault(question.user, client_for(secret, subject=question.user))
        with clock_at(ASKED_AT):
            started = time.perf_counter()
            hits = api_post(client, "/v1/memory/search", {"index_id": index_id, "query": question.text, "limit": LIMIT}, expect=(200,))["data"]
            latencies.append((time.perf_counter() - started) * 1000)
        found = [keys[hit["id"]] for hit in hits]
        rank = found.index(question.answer) + 1 if question.answer in found else None
        rows.append({"question": question, "rank": rank})
    return rows, latencies


def product_scores(rows: list[dict]) -> dict[str, float]:
    ranks = [row["rank"] for row in rows]
    n = len(ranks) or 1
    return {
        "n": len(ranks),
        "r@1": sum(rank == 1 for rank in ranks) / n,
        "r@5": sum(rank is not None and rank <= 5 for rank in ranks) / n,
        "mrr": sum(1 / rank for rank in ranks if rank) / n,
    }


PRODUCT_GROUPS = {
    "training users (1, 3, 5)": lambda question: question.training,
    "held-out users (2, 4, 6)": lambda question: not question.training,
}
PRODUCT_SLICES = {
    "facts": lambda question: question.kind == "fact",
    "preferences": lambda question: question.kind == "preference",
    "commitments": lambda question: question.kind == "commitment",
    "rules (behaviour)": lambda question: question.kind == "behaviour",
    "shared rules": lambda question: question.kind == "shared rule",
    "other language": lambda question: question.cross_language,
    "naming a time": lambda question: question.names_time,
}


def product_table(results: dict[str, list[dict]]) -> list[str]:
    """Markdown rows: R@1 / R@5 / MRR per mode, for each half and each slice of the held-out half."""
    lines = ["| questions | mode | n | R@1 | R@5 | MRR |", "|---|---|---|---|---|---|"]
    for group, chosen in PRODUCT_GROUPS.items():
        for mode, rows in results.items():
            scores = product_scores([row for row in rows if chosen(row["question"])])
            lines.append(f"| {group} | {mode} | {scores['n']} | {scores['r@1']:.3f} | {scores['r@5']:.3f} | {scores['mrr']:.3f} |")
    for name, chosen in PRODUCT_SLICES.items():
        for mode, rows in results.items():
            scores = product_scores([row for row in rows if not row["question"].training and chosen(row["question"])])
            lines.append(f"| held out: {name} | {mode} | {scores['n']} | {scores['r@1']:.3f} | {scores['r@5']:.3f} | {scores['mrr']:.3f} |")
    return lines


def product_run(
    *, modes: tuple[str, ...] = ("full text", "hybrid"), fusions: dict[str, Callable] | None = None
) -> tuple[dict[str, list[dict]], dict[str, list[float]]]:
    """Load, embed and ask in a scratch database; answers the rows and latencies per mode (and
    per fusion: a name and what makes the ranking so while the questions are asked)."""
    fusions = fusions or {"": contextlib.nullcontext}
    records, questions = product_set()
    settings.CORE_RATE_LIMIT_PER_MINUTE = 1_000_000_000
    with scratch_database("bench_product"):
        _organisation, _key, secret = organisation_create(name="Product set")
        owner = client_for(secret)
        embeddings = settings.CORE_EMBEDDINGS
        settings.CORE_EMBEDDINGS = "off"
        index_ids = {mode: api_post(owner, "/v1/indexes", {"name": mode, "embeddings": mode == "hybrid"}, expect=(201,))["id"] for mode in modes}
        keys = product_load(records=records, secret=secret, index_ids=index_ids)
        settings.CORE_EMBEDDINGS = embeddings
        if "hybrid" in index_ids:
            call_command("embed_records", "--index", index_ids["hybrid"], stdout=StringIO(), stderr=StringIO())
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        results, latencies = {}, {}
        for mode, index_id in index_ids.items():
            for fusion, ranked_so in fusions.items():
                name = f"{mode}, {fusion}" if fusion else mode
                with ranked_so():
                    results[name], latencies[name] = product_ask(questions=questions, secret=secret, index_id=index_id, keys=keys[mode])
    return results, latencies


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    results, _latencies = product_run()
    print("\n".join(product_table(results)))


if __name__ == "__main__":
    main()
