"""The second look at the first ranking's best candidates (memory.search.rerank)."""
from datetime import datetime, timedelta, timezone

import pytest

from memory.search import ranking, weights
from memory.search.ranking import Candidate, candidates_rank
from memory.search.rerank import ADDED_FEATURES, RERANK_DEPTH, rerank_features

NOW = datetime(2026, 11, 30, 12, tzinfo=timezone.utc)
SAID = NOW - timedelta(days=40)


def _features(query, texts, *, first=None, text_scores=None, closeness=None):
    count = len(texts)
    return rerank_features(
        query=query, texts=texts, first=first or [0.0] * count,
        text_scores=text_scores or [0.0] * count, closeness=closeness or [0.0] * count,
    )


def test_a_record_that_tells_a_time_answers_a_question_that_asks_when():
    texts = ["Caroline: I went to the support group yesterday.", "Caroline: The support group was lovely.", "Sanne is jarig op 3 mei."]

    asked = _features("When did Caroline go to the support group?", texts)
    told = _features("Wanneer is Sanne jarig?", texts)
    not_asked = _features("What did Caroline think of the support group?", texts)

    assert [row["time_told"] for row in asked] == [1.0, 0.0, 1.0]
    assert told[2]["time_told"] == 1.0
    assert [row["time_told"] for row in not_asked] == [0.0, 0.0, 0.0]


def test_a_number_answers_how_many_in_either_language():
    texts = ["Joris heeft twee kinderen.", "Joris woont in Zwolle.", "Emma has 3 dogs."]

    assert [row["number_told"] for row in _features("Hoeveel kinderen heeft Joris?", texts)] == [1.0, 0.0, 1.0]
    assert [row["number_told"] for row in _features("Where does Joris live?", texts)] == [0.0, 0.0, 0.0]


def test_coverage_weighs_the_questions_rare_words_most_and_meets_other_endings():
    texts = ["Melanie: I love painting sunsets.", "Melanie: I went camping.", "Melanie: Camping again soon.", "Melanie: painted a lake"]

    rows = _features("What does Melanie paint?", texts)

    # "Melanie" is in every candidate and tells little; "paint" (painting, painted) in two.
    assert rows[0]["coverage"] == rows[3]["coverage"] > rows[1]["coverage"] > 0
    assert rows[1]["coverage"] == rows[2]["coverage"]


def test_pairs_are_the_questions_neighbouring_words_standing_near_each_other():
    rows = _features("Who signed the contract?", ["Bram signed it: the contract is done.", "The contract was long and dull; nobody here has signed anything."])

    assert rows[0]["pairs"] == 1.0
    assert rows[1]["pairs"] == 0.0


def test_places_by_text_and_by_closeness_whatever_their_scale():
    rows = _features("q", ["a", "b", "c"], text_scores=[0.1, 0.3, 0.0], closeness=[0.9, 0.2, 0.5])

    assert [row["text_rank"] for row in rows] == [0.5, 1.0, 0.0]  # no word of the question: no place
    assert [row["vector_rank"] for row in rows] == [1.0, 1 / 3, 0.5]


def _candidate(record_id, *, text, similarity, words, created_at=SAID):
    return Candidate(
        record_id=record_id, text_score=text, similarity=similarity, created_at=created_at,
        effective_confidence=1.0, retrieval_count=0, text=words, type="fact", subject="caroline",
    )


def test_with_the_shipped_weights_the_turn_that_tells_when_is_lifted_above_a_closer_one():
    """A crafted store: two turns about the support group, the closer one without a time."""
    candidates = [
        _candidate("closer", text=0.2, similarity=0.86, words="Caroline: The support group was so lovely and warm."),
        _candidate("when", text=0.2, similarity=0.85, words="Caroline: I went to the support group yesterday."),
        _candidate("other", text=0.0, similarity=0.80, words="Caroline: My kids love the beach."),
    ]

    def order(query):
        return [record_id for record_id, _ in candidates_rank(candidates, query=query, windows=[], now=NOW, limit=3)]

    assert order("When did Caroline go to the support group?")[0] == "when"
    assert order("How did Caroline find the support group?")[0] == "closer"


def test_only_the_first_rankings_best_are_looked_at_again_and_scores_fall_with_the_order(monkeypatch):
    # A second look that knows only whether a record tells a time.
    monkeypatch.setattr(weights, "RERANK_HYBRID", {**{name: 0.0 for name in ADDED_FEATURES}, "time_told": 5.0})
    candidates = [
        _candidate(f"r{number:02}", text=0.0, similarity=0.89 - number * 0.002, words="Caroline: I went to the group.")
        for number in range(RERANK_DEPTH)
    ] + [_candidate("beyond", text=0.0, similarity=0.70, words="Caroline: I went to the group yesterday.")]
    candidates[7] = _candidate("r07", text=0.0, similarity=0.875, words="Caroline: I went to the group last week.")

    ranked = candidates_rank(candidates, query="When did Caroline go to the group?", windows=[], now=NOW, limit=RERANK_DEPTH + 1)

    assert [record_id for record_id, _ in ranked][:2] == ["r07", "r00"]
    assert ranked[-1][0] == "beyond"  # beyond the best RERANK_DEPTH: not looked at again
    scores = [score for _, score in ranked]
    assert scores == sorted(scores, reverse=True)
    assert all(0.0 < score < 1.0 for score in scores)


def test_without_weights_for_a_second_look_the_first_ranking_answers(monkeypatch):
    monkeypatch.setattr(weights, "RERANK_HYBRID", {})
    candidates = [
        _candidate("closer", text=0.2, similarity=0.86, words="Caroline: The support group was lovely."),
        _candidate("when", text=0.2, similarity=0.85, words="Caroline: I went to the support group yesterday."),
    ]

    ranked = candidates_rank(candidates, query="When did Caroline go to the support group?", windows=[], now=NOW, limit=2)

    assert ranked[0][0] == "closer"
    assert ranked[0][1] == pytest.approx(ranking.fused_score(
        ranking.candidates_features(candidates, query="When did Caroline go to the support group?", windows=[], now=NOW)[0], weights.HYBRID
    ))
