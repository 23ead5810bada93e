"""One ranking from the search's candidates (docs/decisions.md "Search").

Each candidate carries its full-text score (ts_rank_cd scaled to 0..1; 0 when none of the
query's words is in it), when the index embeds its cosine similarity to the query (None while
its vector is still being made), its time, confidence, text and type. The ranking is a
learned one: a linear model over a few features of each candidate, fitted as a pairwise
logistic ranker (bench/fusion.py) on LoCoMo conversations 1–5 and the training half of the
product-shaped set; its weights are the numbers in memory.search.weights. The features:

- `text`: the full-text score relative to the best candidate's; `text_best`: the score itself;
- `closeness`: the cosine read on multilingual-e5-small's own scale (0.75–0.90 onto 0..1: a
  weak semantic match stays weak even when it is the best there is, and two near equals stay
  near), `closeness_gap`: its distance below the best candidate's, `unembedded`: 1 for a
  record whose vector is not made yet while others have one;
- `in_window`: 1 for a record written in a time the question names (memory.search.when), or
  up to its `reach` after: what happened in May is often told in June;
- `recency`: 0.5^(age in whole days / 90), a tie-breaker among near equals;
- `entities`: the share of the question's names and numbers the record holds, rare ones
  weighing most (memory.search.entities);
- `type_named`: the question asks for the record's type ("prefers", "beloofd", "mag ik");
- `length`: log(1 + words) / 5: long records hold more words by chance.
- `neighbour_text`, `neighbour_closeness`: in a conversation index only (`conversation: true`),
  the best text score and closeness among the same person's candidates written within
  NEIGHBOUR_SECONDS of the record: the answer is often the turn after the one that names the
  subject. 0 elsewhere: in a store of separate facts a neighbour in time is not related.

    score = sigmoid(bias + Σ weight · feature) · (1 − CONFIDENCE_WEIGHT + CONFIDENCE_WEIGHT · effective confidence)

within 0..1; a decayed record loses at most a quarter of its score (a rule, not
learned: the sets hold no decayed records). Three kinds of index have their own weights: one
that embeds (a store of facts: `length` left out, it says little there), a conversation index
that embeds, and one searched by full text alone (the vector features are 0 there). Where
memory.search.weights has a second look for the kind (RERANK_*), the first ranking's best
RERANK_DEPTH are ordered again by memory.search.rerank, whose score then replaces the sum
above; the rest stay below them. Ties: effective confidence, retrieval count, id (as
everywhere).
"""
from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from core_memory.base.telemetry.tracing import span
from memory.search import weights
from memory.search.entities import entity_overlaps, question_entities
from memory.search.rerank import RERANK_DEPTH, rerank_features, reranked_sum
from memory.search.when import TimeWindow

# multilingual-e5-small's cosines between a question and a stored text (memory.embedding).
SIMILARITY_FLOOR = 0.75
SIMILARITY_CEILING = 0.90
RECENCY_HALF_LIFE_DAYS = 90.0
CONFIDENCE_WEIGHT = 0.25
FEATURES = (
    "text", "text_best", "closeness", "closeness_gap", "unembedded", "in_window", "recency", "entities", "type_named", "length",
    "neighbour_text", "neighbour_closeness",
)
# In a conversation index, the records of one person written this close to a record are its
# neighbours: the turns said just before and after it. Where the search knows which records were
# said next to each (`Candidate.said_near`: the NEIGHBOUR_TURNS before and after it, in the order
# they were said), only those count, so a conversation loaded in one go (every turn written
# within the same two minutes) keeps its neighbours as they were said.
NEIGHBOUR_SECONDS = 120
NEIGHBOUR_TURNS = 4
# Words with which a question asks for a record of that type, English and Dutch.
_TYPE_WORDS = {
    "preference": re.compile(r"\b(prefer\w*|like[sd]?|love[sd]?|favou?rite|enjoy\w*|want[s]?|liefst|voorkeur|houdt|lekker|wil)\b"),
    "commitment": re.compile(r"\b(promis\w*|agree\w*|owe[sd]?|deadline|will|going to|beloofd|afgesproken|toegezegd|afspraak|nog)\b"),
    "behaviour": re.compile(r"\b(may|must|allowed|never|always|should|rule[s]?|avoid|mag|mogen|moet|moeten|nooit|altijd|regel\w*|vermijden)\b"),
}


@dataclass(frozen=True)
class Candidate:
    record_id: str
    text_score: float
    similarity: float | None
    created_at: datetime
    effective_confidence: float
    retrieval_count: int
    text: str = ""
    type: str = ""
    subject: str | None = None
    # The ids of the person's records said just before and after it (None: not known).
    said_near: frozenset[str] | None = None


def _closeness(similarity: float | None) -> float:
    if similarity is None:
        return 0.0
    return min(1.0, max(0.0, (similarity - SIMILARITY_FLOOR) / (SIMILARITY_CEILING - SIMILARITY_FLOOR)))


def _in_window(moment: datetime, windows: Sequence[TimeWindow]) -> bool:
    return any(window.start <= moment < window.reach for window in windows)


def _neighbours(candidates: Sequence[Candidate]) -> list[list[int]]:
    """For each candidate, the positions of the candidates of the same person written within
    NEIGHBOUR_SECONDS of it (itself excluded) and, where known, said next to it."""
    order = sorted(range(len(candidates)), key=lambda i: (candidates[i].subject or "", candidates[i].created_at))
    found: list[list[int]] = [[] for _ in candidates]
    for place, i in enumerate(order):
        for j in order[place + 1:]:
            if candidates[j].subject != candidates[i].subject:
                break
            if (candidates[j].created_at - candidates[i].created_at).total_seconds() > NEIGHBOUR_SECONDS:
                break
            if not _said_next_to(candidates[i], candidates[j]):
                continue
            found[i].append(j)
            found[j].append(i)
    return found


def _said_next_to(one: Candidate, other: Candidate) -> bool:
    if one.said_near is None or other.said_near is None:
        return True
    return other.record_id in one.said_near or one.record_id in other.said_near


def candidates_features(
    candidates: Sequence[Candidate], *, query: str, windows: Sequence[TimeWindow], now: datetime, conversation: bool = False
) -> list[dict[str, float]]:
    """Each candidate's features (FEATURES), as the module docstring describes them."""
    if not candidates:
        return []
    best_text = max(candidate.text_score for candidate in candidates) or 1.0
    embedded = any(candidate.similarity is not None for candidate in candidates)
    best_closeness = max(_closeness(candidate.similarity) for candidate in candidates)
    overlaps = entity_overlaps(question_entities(query), [candidate.text for candidate in candidates])
    lowered = query.lower()
    named_types = {name for name, words in _TYPE_WORDS.items() if words.search(lowered)}
    neighbours = _neighbours(candidates) if conversation else [[] for _ in candidates]
    rows = []
    for candidate, overlap, near in zip(candidates, overlaps, neighbours, strict=True):
        closeness = _closeness(candidate.similarity)
        # Whole days: records of one day tie, and the ties decide, not microseconds.
        age_days = max(0, (now - candidate.created_at).days)
        rows.append({
            "text": candidate.text_score / best_text,
            "text_best": candidate.text_score,
            "closeness": closeness,
            "closeness_gap": closeness - best_closeness if embedded else 0.0,
            "unembedded": float(embedded and candidate.similarity is None),
            "in_window": float(_in_window(candidate.created_at, windows)),
            "recency": 0.5 ** (age_days / RECENCY_HALF_LIFE_DAYS),
            "entities": overlap,
            "type_named": float(candidate.type in named_types),
            "length": math.log1p(len(candidate.text.split())) / 5,
            "neighbour_text": max((candidates[j].text_score / best_text for j in near), default=0.0),
            "neighbour_closeness": max((_closeness(candidates[j].similarity) for j in near), default=0.0),
        })
    return rows


def fused_sum(features: dict[str, float], model: dict[str, float]) -> float:
    """bias + Σ weight · feature: the model's logit."""
    total = 0.0
    for name, value in features.items():
        total += model[name] * value
    return model["bias"] + total


def _sigmoid(total: float) -> float:
    return 1 / (1 + math.exp(-max(-60.0, min(60.0, total))))


def fused_score(features: dict[str, float], model: dict[str, float]) -> float:
    """sigmoid(bias + Σ weight · feature): within 0..1, in the order of the linear sum."""
    return _sigmoid(fused_sum(features, model))


def candidates_rank(
    candidates: Sequence[Candidate],
    *,
    windows: Sequence[TimeWindow],
    now: datetime,
    limit: int,
    query: str = "",
    conversation: bool = False,
) -> list[tuple[str, float]]:
    """(record id, score) best first, at most `limit` (the module docstring has the formula),
    the best RERANK_DEPTH looked at a second time (memory.search.rerank) where its model has weights."""
    model, second = _models(embedded=any(candidate.similarity is not None for candidate in candidates), conversation=conversation)
    features = candidates_features(candidates, query=query, windows=windows, now=now, conversation=conversation)
    sums = [fused_sum(row, model) for row in features]
    order = sorted(range(len(candidates)), key=lambda i: _tie_order(candidates[i], sums[i]))
    if second:
        order, sums = _reranked(order, sums, candidates, features, query=query, model=second)
    scored = [(candidates[i], _sigmoid(sums[i]) * _confidence_factor(candidates[i])) for i in order[:limit]]
    return [(candidate.record_id, score) for candidate, score in scored]


def _models(*, embedded: bool, conversation: bool) -> tuple[dict[str, float], dict[str, float]]:
    """The first ranking's weights and the second look's (empty: none) for this kind of index."""
    if not embedded:
        return weights.FULL_TEXT, weights.RERANK_FULL_TEXT
    if conversation:
        return weights.HYBRID_CONVERSATION, weights.RERANK_CONVERSATION
    return weights.HYBRID, weights.RERANK_HYBRID


def _confidence_factor(candidate: Candidate) -> float:
    return 1 - CONFIDENCE_WEIGHT + CONFIDENCE_WEIGHT * candidate.effective_confidence


def _tie_order(candidate: Candidate, total: float) -> tuple:
    """Best first by the score as answered; ties: effective confidence, retrieval count, id."""
    score = _sigmoid(total) * _confidence_factor(candidate)
    return (-score, -candidate.effective_confidence, -candidate.retrieval_count, candidate.record_id)


def _reranked(
    order: list[int], sums: list[float], candidates: Sequence[Candidate], features: list[dict[str, float]], *, query: str, model: dict[str, float]
) -> tuple[list[int], list[float]]:
    """The first ranking's best RERANK_DEPTH ordered by their second look, above the rest, whose
    sums are held below the lowest of those so that the scores still fall with the order."""
    top, rest = order[:RERANK_DEPTH], order[RERANK_DEPTH:]
    with span("search.rerank"):
        rows = rerank_features(
            query=query, texts=[candidates[i].text for i in top], first=[sums[i] for i in top],
            text_scores=[candidates[i].text_score for i in top], closeness=[features[i]["closeness"] for i in top],
        )
        second = dict(zip(top, (reranked_sum(row, model) for row in rows), strict=True))
    top.sort(key=lambda i: _tie_order(candidates[i], second[i]))
    floor = min(second.values(), default=0.0)
    totals = {**{i: min(sums[i], floor) for i in rest}, **second}
    return top + rest, [totals[i] for i in range(len(candidates))]
