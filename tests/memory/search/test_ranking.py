"""The search's learned fusion of full text, vectors, time, names and neighbours (memory.search.ranking)."""
import math
from datetime import datetime, timedelta, timezone

import pytest

from memory.search import weights
from memory.search.ranking import FEATURES, Candidate, candidates_features, candidates_rank
from memory.search.when import TimeWindow

NOW = datetime(2026, 11, 30, 12, tzinfo=timezone.utc)
LONG_AGO = NOW - timedelta(days=3650)


def _candidate(record_id, *, text=0.0, similarity=None, created_at=LONG_AGO, confidence=1.0, retrievals=0, words="", type="fact"):
    return Candidate(
        record_id=record_id, text_score=text, similarity=similarity, created_at=created_at,
        effective_confidence=confidence, retrieval_count=retrievals, text=words, type=type, subject="anna",
    )


def _expected(features: dict[str, float], model: dict[str, float]) -> float:
    return 1 / (1 + math.exp(-(model["bias"] + sum(model[name] * features[name] for name in FEATURES))))


@pytest.mark.parametrize(
    ("candidates", "model"),
    [
        ([_candidate("a", text=0.25, words="Acme wil facturen"), _candidate("b", text=0.5, words="facturen per post")], weights.FULL_TEXT),
        ([_candidate("a", text=0.25, similarity=0.8, words="x"), _candidate("b", similarity=0.86, words="y z")], weights.HYBRID),
    ],
)
def test_the_score_is_the_shipped_models_sigmoid_of_the_features(candidates, model, monkeypatch):
    """The learned fusion is what ranks: full-text weights without vectors, hybrid ones with them
    (the first look: memory.search.rerank, the second, has tests of its own)."""
    monkeypatch.setattr(weights, "RERANK_HYBRID", {})
    monkeypatch.setattr(weights, "RERANK_FULL_TEXT", {})
    features = candidates_features(candidates, query="facturen", windows=[], now=NOW)

    scores = dict(candidates_rank(candidates, query="facturen", windows=[], now=NOW, limit=5))

    for candidate, row in zip(candidates, features, strict=True):
        assert scores[candidate.record_id] == pytest.approx(_expected(row, model))
        assert 0.0 < scores[candidate.record_id] < 1.0


def test_the_features_read_text_relative_to_the_best_and_the_cosine_on_e5s_band():
    rows = candidates_features(
        [_candidate("a", text=0.2, similarity=0.78), _candidate("b", text=0.4, similarity=0.87), _candidate("c", text=0.1)],
        query="q", windows=[], now=NOW,
    )

    assert [round(row["text"], 3) for row in rows] == [0.5, 1.0, 0.25]
    assert [round(row["closeness"], 3) for row in rows] == [0.2, 0.8, 0.0]
    assert [round(row["closeness_gap"], 3) for row in rows] == [-0.6, 0.0, -0.8]
    assert [row["unembedded"] for row in rows] == [0.0, 0.0, 1.0]


def test_a_record_naming_the_questions_person_is_lifted_above_an_equal_one():
    """Entity overlap: the same words and closeness, but only one record is about Sanne."""
    candidates = [
        _candidate("bram", text=0.3, similarity=0.84, words="Bram de Vries woont in Zwolle."),
        _candidate("sanne", text=0.3, similarity=0.84, words="Sanne Bakker woont in Zwolle."),
    ]

    ranking = candidates_rank(candidates, query="Waar woont Sanne?", windows=[], now=NOW, limit=2)

    assert [record_id for record_id, _score in ranking] == ["sanne", "bram"]
    assert ranking[0][1] > ranking[1][1]


def test_a_record_of_a_named_time_is_lifted_and_a_decayed_one_lowered_by_at_most_a_quarter():
    window = TimeWindow(start=NOW - timedelta(days=40), end=NOW - timedelta(days=10), unit="month")
    candidates = [
        _candidate("then", text=0.3, created_at=NOW - timedelta(days=20)),
        _candidate("told_later", text=0.3, created_at=NOW - timedelta(days=5)),
        _candidate("before", text=0.3, created_at=NOW - timedelta(days=60)),
        _candidate("faded", text=0.3, created_at=NOW - timedelta(days=60), confidence=0.2),
    ]

    scores = dict(candidates_rank(candidates, query="what happened last month", windows=[window], now=NOW, limit=10))

    assert scores["then"] > scores["before"]
    assert scores["told_later"] > scores["before"]  # within the window's reach (31 days for a month)
    assert scores["faded"] == pytest.approx(scores["before"] * (0.75 + 0.25 * 0.2))


def test_in_a_conversation_index_a_turn_is_lifted_by_its_neighbour():
    """The answer follows the turn that names the subject; only a conversation index reads that."""
    said = NOW - timedelta(days=3)
    candidates = [
        _candidate("question", text=0.5, similarity=0.86, created_at=said, words="Did you go to the pottery class?"),
        _candidate("answer", text=0.1, similarity=0.80, created_at=said + timedelta(seconds=30), words="Yes, I made a bowl!"),
        _candidate("elsewhere", text=0.12, similarity=0.80, created_at=said - timedelta(days=2), words="Yes, I made a plan!"),
    ]

    def order(conversation):
        return [record_id for record_id, _score in candidates_rank(
            candidates, query="What did she make at the pottery class?", windows=[], now=NOW, limit=3, conversation=conversation
        )]

    assert order(conversation=True).index("answer") < order(conversation=True).index("elsewhere")
    # A little more of the question's words: first where turns are separate records.
    assert order(conversation=False).index("elsewhere") < order(conversation=False).index("answer")


def test_neighbours_are_the_same_persons_records_within_two_minutes():
    said = NOW - timedelta(days=3)
    near = Candidate("near", 0.0, 0.85, said + timedelta(seconds=90), 1.0, 0, "x", "fact", "anna")
    far = Candidate("far", 0.0, 0.85, said + timedelta(minutes=5), 1.0, 0, "x", "fact", "anna")
    other = Candidate("other", 0.0, 0.85, said + timedelta(seconds=10), 1.0, 0, "x", "fact", "bram")
    turn = Candidate("turn", 0.4, 0.80, said, 1.0, 0, "x", "fact", "anna")

    rows = candidates_features([turn, near, far, other], query="q", windows=[], now=NOW, conversation=True)

    assert rows[0]["neighbour_closeness"] == pytest.approx(2 / 3)  # near's 0.85 on the 0.75–0.90 band
    assert rows[1]["neighbour_text"] == 1.0  # the turn's text score is the best
    assert rows[2]["neighbour_text"] == 0.0 and rows[3]["neighbour_text"] == 0.0
