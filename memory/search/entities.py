"""Names, places, organisations and numbers a question shares with a record, by rule, offline.

A question's entities are its words written with a capital that are not the function words
of English or Dutch a question or sentence starts with ("What", "Wie", "I"), and its numbers
("25.000", "€25,000" and "25000" are one number). A record has an entity when the word, in
any case, is one of its words: "Where is Sanne based?" finds "Sanne de Vries woont in Zwolle"
and not a record about Bram, which the vectors, reading both as "where someone lives", would
rank as close.

The overlap weighs each entity by how rare it is among the search's candidates: the name of
the person a whole conversation is about is in most candidates and tells little; a city or a
pet's name in two of them tells a lot.
"""
from __future__ import annotations

import math
import re
from collections.abc import Sequence

_WORD = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_]+", re.UNICODE)
# Function words that start a question or a sentence with a capital (English, Dutch), and the
# pronouns written with one ("I").
NOT_NAMES = frozenset("""
    what when where who whom whose which why how did does do is are was were can could would should will shall may might must
    i i'm my me we our us you your he she his her him they their them it its the a an in on at of for to from and or but if
    has have had be been this that these those there here please tell give list show any some all
    wat wanneer waar wie wiens welke welk waarom hoe hoeveel hoelang heeft hebben had hadden is zijn was waren kan kun kunnen
    mag mogen moet moeten zou zouden wil wilt willen ik mijn mij me we wij ons onze jij je jouw u uw hij zij ze hun haar het
    de een in op bij van voor naar en of maar als dit dat deze die daar hier er geef noem toon zeg
""".split())


def _token(word: str) -> str:
    """A word as compared: lower case; a number without its separators."""
    return re.sub(r"[.,]", "", word) if word[0].isdigit() else word.lower()


def question_entities(query: str) -> list[str]:
    """The question's names and numbers, each once, in order, compared as `_token` gives them."""
    found: list[str] = []
    for match in _WORD.finditer(query):
        word = match.group()
        if word[0].isdigit() or (word[0].isupper() and word.lower() not in NOT_NAMES):
            token = _token(word)
            if token not in found:
                found.append(token)
    return found


def record_tokens(text: str) -> frozenset[str]:
    return frozenset(_token(word) for word in _WORD.findall(text))


def entity_overlaps(entities: Sequence[str], texts: Sequence[str]) -> list[float]:
    """For each text, the share of the question's entities it holds (0..1), each entity weighed
    by its rarity among `texts`; 0 for all when the question names none."""
    if not entities:
        return [0.0] * len(texts)
    tokens = [record_tokens(text) for text in texts]
    weights = {entity: math.log(1 + len(texts) / (1 + sum(entity in each for each in tokens))) for entity in entities}
    total = sum(weights.values()) or 1.0
    return [sum(weight for entity, weight in weights.items() if entity in each) / total for each in tokens]
