"""One ranking from the search's candidates (R-5.10; docs/decisions.md "Search").

Each candidate carries its full-text score (ts_rank_cd scaled to 0..1; 0 when none of the
query's words is in it) and, when the index embeds, its cosine similarity to the query (None
while its vector is still being made). Relevance is

    relevance = VECTOR_WEIGHT · closeness + (1 − VECTOR_WEIGHT) · text score / best text score
    closeness = (similarity − SIMILARITY_FLOOR) / (SIMILARITY_CEILING − SIMILARITY_FLOOR), within 0..1

or the text score as it is when no candidate has a vector. Score fusion, not reciprocal rank
fusion: the embeddings spike measured equal-weight RRF barely above full text on LoCoMo,
because it lets the weaker ranking pull good hits down. The similarity is read on the model's
own scale (e5's cosines between a question and a text lie between 0.72 and 0.86 for 98% of
pairs): a weak semantic match stays weak even when it is the best there is, and two near
equals stay near, which scaling to the candidates' own minimum and maximum would blow apart in
a small store. A candidate without a vector has closeness 0.

The score then adds a record's time and confidence:

    score = (relevance + TIME_BOOST · in_window + RECENCY_BOOST · 0.5^(age / RECENCY_HALF_LIFE))
            / (1 + TIME_BOOST + RECENCY_BOOST)
            · (1 − CONFIDENCE_WEIGHT + CONFIDENCE_WEIGHT · effective confidence)

`in_window` is 1 for a record written in a time the question names (memory.search.when), or
up to its `reach` after; the recency prior (age in whole days) is small, a tie-breaker among
near equals; and a
decayed record (R-5.9) loses at most a quarter of its score. The score stays within 0..1.
Ties: effective confidence, retrieval count, id (as everywhere, R-7.7).

VECTOR_WEIGHT, the similarity band, TIME_BOOST and RECENCY_BOOST were chosen on LoCoMo
conversations 1–5 only (bench/RESULTS.md); conversations 6–10 are the held-out test.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from memory.search.when import TimeWindow

VECTOR_WEIGHT = 0.45
# multilingual-e5-small's cosines between a question and a stored text (memory.embedding).
SIMILARITY_FLOOR = 0.75
SIMILARITY_CEILING = 0.90
TIME_BOOST = 0.3
RECENCY_BOOST = 0.02
RECENCY_HALF_LIFE_DAYS = 90.0
CONFIDENCE_WEIGHT = 0.25


@dataclass(frozen=True)
class Candidate:
    record_id: str
    text_score: float
    similarity: float | None
    created_at: datetime
    effective_confidence: float
    retrieval_count: int


def _closeness(similarity: float | None) -> float:
    if similarity is None:
        return 0.0
    return min(1.0, max(0.0, (similarity - SIMILARITY_FLOOR) / (SIMILARITY_CEILING - SIMILARITY_FLOOR)))


def _relevances(candidates: Sequence[Candidate]) -> list[float]:
    if all(candidate.similarity is None for candidate in candidates):
        return [candidate.text_score for candidate in candidates]
    best_text = max(candidate.text_score for candidate in candidates) or 1.0
    return [
        VECTOR_WEIGHT * _closeness(candidate.similarity) + (1 - VECTOR_WEIGHT) * candidate.text_score / best_text
        for candidate in candidates
    ]


def _in_window(moment: datetime, windows: Sequence[TimeWindow]) -> bool:
    return any(window.start <= moment < window.reach for window in windows)


def candidates_rank(
    candidates: Sequence[Candidate], *, windows: Sequence[TimeWindow], now: datetime, limit: int
) -> list[tuple[str, float]]:
    """(record id, score) best first, at most `limit` (the module docstring has the formula)."""
    scored = []
    for candidate, relevance in zip(candidates, _relevances(candidates), strict=True):
        # Whole days: records of one day tie, and the ties below decide, not microseconds.
        age_days = max(0, (now - candidate.created_at).days)
        boosted = (
            relevance
            + TIME_BOOST * _in_window(candidate.created_at, windows)
            + RECENCY_BOOST * 0.5 ** (age_days / RECENCY_HALF_LIFE_DAYS)
        ) / (1 + TIME_BOOST + RECENCY_BOOST)
        score = boosted * (1 - CONFIDENCE_WEIGHT + CONFIDENCE_WEIGHT * candidate.effective_confidence)
        scored.append((candidate, score))
    scored.sort(key=lambda pair: (-pair[1], -pair[0].effective_confidence, -pair[0].retrieval_count, pair[0].record_id))
    return [(candidate.record_id, score) for candidate, score in scored[:limit]]
