"""A second look at the first ranking's best RERANK_DEPTH candidates (memory.search.ranking).

The first ranking reads each candidate alone. This one reads the words of the question and of
the best few candidates side by side, which is cheap for forty short texts and costs no query:

- `first`: the first ranking's sum (its logit), so the second only moves what it has reason to;
- `coverage`: the share of the question's content words (its words less the function words,
  compared by their first five letters, so "researching" meets "research" and "facturen"
  "factuur") the record holds, each word weighed by how rare it is among these candidates;
- `pairs`: the share of the question's neighbouring content words that stand within three
  words of each other in the record ("support group", "signed contract");
- `time_told`: the question asks when and the record tells a time (a month, a weekday,
  "yesterday", "last week", "gisteren", a date or a year);
- `number_told`: the question asks how many or how much and the record holds a number;
- `text_rank`, `vector_rank`: 1 / (1 + place) of the record among the candidates by full text
  and by closeness alone: where it stands, whatever the scale of the scores.

    score = sigmoid(first + Σ weight · feature)

with the weights of memory.search.weights (RERANK_HYBRID, RERANK_CONVERSATION,
RERANK_FULL_TEXT; empty: no second look). Fitted the way the first ranking is (bench/fusion.py),
on the first ranking's best RERANK_DEPTH of the training questions, then divided by the weight
the fit gave `first`: the same order, on the first ranking's scale.
"""
from __future__ import annotations

import math
import re
from collections.abc import Sequence

from memory.search.entities import NOT_NAMES

RERANK_DEPTH = 40
RERANK_FEATURES = ("first", "coverage", "pairs", "time_told", "number_told", "text_rank", "vector_rank")
ADDED_FEATURES = RERANK_FEATURES[1:]
STEM_LENGTH = 5
PAIR_DISTANCE = 3

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_FUNCTION_WORDS = NOT_NAMES | frozenset("""
    about after again also am as because before being both by during each few further into just more most no nor not now
    off once only other out over own same so than then too under until up very with would yes
    aan af al alleen altijd dan dus door geen hem heel hen iets iemand ja jullie kon men met na nee niet niets nog nu ook
    om omdat onder ooit over te tegen toch tot uit veel want werd wordt worden zal ze zelf zo zich zonder
""".split())
_ASKS_WHEN = re.compile(r"\b(when|what (?:date|day|month|year|time)|which (?:date|day|month|year)|how long ago|wanneer|welke (?:datum|dag|maand)|hoe laat)\b")
_ASKS_NUMBER = re.compile(r"\b(how (?:many|much|old|often|long)|hoeveel|hoe (?:oud|vaak|lang))\b")
_MONTHS = (
    "january february march april may june july august september october november december "
    "januari februari maart mei juni juli augustus oktober"
)
_WEEKDAYS = "monday tuesday wednesday thursday friday saturday sunday maandag dinsdag woensdag donderdag vrijdag zaterdag zondag"
_TIME_TOLD = re.compile(
    r"\b(" + "|".join((_MONTHS + " " + _WEEKDAYS).split())
    + r"|yesterday|today|tonight|tomorrow|ago|last (?:week|month|year|night|weekend)|next (?:week|month|year)|this (?:week|month|year|weekend)"
    + r"|gisteren|vandaag|morgen|eergisteren|geleden|vorige|afgelopen|volgende"
    + r"|\d{1,2}(?:st|nd|rd|th|e)|(?:19|20)\d\d|\d{1,2}:\d\d)\b"
)
_NUMBER_TOLD = re.compile(
    r"\d|\b(one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|hundred|thousand|once|twice|"
    r"één|een paar|twee|drie|vier|vijf|zes|zeven|acht|negen|tien|elf|twaalf|twintig|honderd|duizend)\b"
)


def _stems(text: str) -> list[str]:
    """The content words of a text, in order, cut to their first STEM_LENGTH letters."""
    return [word[:STEM_LENGTH] for word in _WORD.findall(text.lower()) if word not in _FUNCTION_WORDS and len(word) > 1]


def _ranks(values: Sequence[float]) -> list[float]:
    """1 / (1 + place) of each value among all, the highest first (equals share the better place)."""
    place: dict[float, int] = {}
    for number, value in enumerate(sorted(values, reverse=True)):
        place.setdefault(value, number)
    return [1 / (1 + place[value]) for value in values]


def rerank_features(
    *, query: str, texts: Sequence[str], first: Sequence[float], text_scores: Sequence[float], closeness: Sequence[float]
) -> list[dict[str, float]]:
    """Each candidate's second-look features (RERANK_FEATURES), the candidates in the first ranking's order."""
    asked = list(dict.fromkeys(_stems(query)))
    records = [_stems(text) for text in texts]
    held = [set(stems) for stems in records]
    rarity = {stem: math.log(1 + len(texts) / (1 + sum(stem in each for each in held))) for stem in asked}
    total = sum(rarity.values()) or 1.0
    pairs = list(zip(asked, asked[1:]))
    lowered_query = query.lower()
    asks_when, asks_number = bool(_ASKS_WHEN.search(lowered_query)), bool(_ASKS_NUMBER.search(lowered_query))
    text_ranks, vector_ranks = _ranks(text_scores), _ranks(closeness)
    rows = []
    for position, text in enumerate(texts):
        places: dict[str, list[int]] = {}
        for place, stem in enumerate(records[position]):
            places.setdefault(stem, []).append(place)
        near = 0
        for a, b in pairs:
            at, bt = places.get(a), places.get(b)
            if at and bt and any(abs(i - j) <= PAIR_DISTANCE for i in at for j in bt):
                near += 1
        lowered = text.lower()
        rows.append({
            "first": first[position],
            "coverage": sum(weight for stem, weight in rarity.items() if stem in held[position]) / total,
            "pairs": near / len(pairs) if pairs else 0.0,
            "time_told": float(asks_when and bool(_TIME_TOLD.search(lowered))),
            "number_told": float(asks_number and bool(_NUMBER_TOLD.search(lowered))),
            "text_rank": text_ranks[position] if text_scores[position] > 0 else 0.0,
            "vector_rank": vector_ranks[position] if closeness[position] > 0 else 0.0,
        })
    return rows


def reranked_sum(features: dict[str, float], model: dict[str, float]) -> float:
    """The first ranking's sum plus what the second look adds: the order is the fitted model's
    (its weights divided by the weight it gave the first sum), the scale stays the first's, so a
    score still reads as the first ranking's chance that the record is the one asked for."""
    return features["first"] + sum(model[name] * features[name] for name in ADDED_FEATURES)
