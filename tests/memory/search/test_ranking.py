"""The search's fusion of full text and vectors, with time and confidence (memory.search.ranking)."""
from datetime import datetime, timedelta, timezone

import pytest

from memory.search.ranking import Candidate, candidates_rank
from memory.search.when import TimeWindow

NOW = datetime(2026, 11, 30, 12, tzinfo=timezone.utc)
LONG_AGO = NOW - timedelta(days=3650)


def _candidate(record_id, *, text=0.0, similarity=None, created_at=LONG_AGO, confidence=1.0, retrievals=0):
    return Candidate(
        record_id=record_id, text_score=text, similarity=similarity, created_at=created_at,
        effective_confidence=confidence, retrieval_count=retrievals,
    )


def test_without_vectors_the_text_score_stands():
    ranking = candidates_rank([_candidate("a", text=0.25), _candidate("b", text=0.5)], windows=[], now=NOW, limit=5)

    # (score + the recency prior of a ten-year-old record, ~0) / (1 + 0.3 + 0.02)
    assert [(record_id, round(score, 4)) for record_id, score in ranking] == [("b", 0.3788), ("a", 0.1894)]


def test_closeness_and_relative_text_score_are_weighed():
    """0.45 × closeness on e5's band 0.75–0.90 + 0.55 × text score relative to the best."""
    ranking = candidates_rank(
        [
            _candidate("words", text=0.4, similarity=0.78),  # 0.45 × 0.2 + 0.55 × 1.0 = 0.64
            _candidate("meaning", text=0.0, similarity=0.90),  # 0.45 × 1.0 = 0.45
            _candidate("both", text=0.2, similarity=0.85),  # 0.45 × 0.667 + 0.55 × 0.5 = 0.575
            _candidate("unembedded", text=0.2),  # 0.55 × 0.5 = 0.275
            _candidate("far", text=0.0, similarity=0.60),  # below the band: 0
        ],
        windows=[], now=NOW, limit=10,
    )

    assert [(record_id, round(score * 1.32, 3)) for record_id, score in ranking] == [
        ("words", 0.64), ("both", 0.575), ("meaning", 0.45), ("unembedded", 0.275), ("far", 0.0)
    ]


def test_a_record_of_a_named_time_is_lifted_and_a_decayed_one_lowered():
    window = TimeWindow(start=NOW - timedelta(days=40), end=NOW - timedelta(days=10), unit="month")
    candidates = [
        _candidate("then", text=0.3, created_at=NOW - timedelta(days=20)),
        _candidate("told_later", text=0.3, created_at=NOW - timedelta(days=5)),
        _candidate("before", text=0.4, created_at=NOW - timedelta(days=400)),
        _candidate("faded", text=0.4, created_at=NOW - timedelta(days=400), confidence=0.2),
    ]

    scores = dict(candidates_rank(candidates, windows=[window], now=NOW, limit=10))

    assert scores["then"] > scores["before"]
    assert scores["told_later"] > scores["before"]  # within the window's reach (31 days for a month)
    assert scores["faded"] == pytest.approx(scores["before"] * (0.75 + 0.25 * 0.2))


def test_ties_go_to_effective_confidence_then_retrievals_then_id():
    same = {"text": 0.3, "created_at": LONG_AGO}
    ranking = candidates_rank(
        [_candidate("c", **same), _candidate("b", retrievals=3, **same), _candidate("a", **same)], windows=[], now=NOW, limit=2
    )

    assert [record_id for record_id, _ in ranking] == ["b", "a"]
