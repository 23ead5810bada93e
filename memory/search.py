"""Full-text query building and rank fusion for record search (R-5.6 `q`, R-5.10).

Queries are natural language in Dutch or English ("hoe wil Acme de facturen",
"how does Acme want its invoices"). Each word becomes the OR of its Dutch and
English lexemes, matching the stored Dutch+English vector (memory.models). A word
that either language treats as a stop word is dropped: "de" is an English
non-word but a Dutch article, "the" the reverse, and keeping either would make
every record of the other language a candidate.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from django.contrib.postgres.search import SearchQuery
from django.db import connection

from memory.models import SEARCH_CONFIGS

MAX_QUERY_WORDS = 32
# Reciprocal rank fusion's damping constant (Cormack et al.); 60 is the usual choice.
FUSION_K = 60

_WORD = re.compile(r"\w+", re.UNICODE)


def query_words(text: str) -> list[str]:
    words: list[str] = []
    for word in _WORD.findall(text.lower()):
        if word not in words:
            words.append(word)
    return words[:MAX_QUERY_WORDS]


# A word's lexemes depend only on the word and PostgreSQL's dictionaries, which do not change
# while Core runs: each process asks once per word, up to this many words.
LEXEME_CACHE_SIZE = 50_000
_known_lexemes: dict[str, tuple[frozenset[str], ...]] = {}


def _lexemes_per_word(words: Sequence[str]) -> list[tuple[frozenset[str], ...]]:
    """For each word, its lexemes under each configuration of SEARCH_CONFIGS (at most one query)."""
    known = {word: _known_lexemes[word] for word in words if word in _known_lexemes}
    missing = [word for word in words if word not in known]
    if missing:
        columns = ", ".join(
            f"ARRAY(SELECT unnest(tsvector_to_array(to_tsvector('{config}'::regconfig, word))))" for config in SEARCH_CONFIGS
        )
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT word, {columns} FROM unnest(%s::text[]) AS words(word)", [missing])
            found = {row[0]: tuple(frozenset(lexemes) for lexemes in row[1:]) for row in cursor.fetchall()}
        if len(_known_lexemes) + len(found) > LEXEME_CACHE_SIZE:
            _known_lexemes.clear()
        _known_lexemes.update(found)
        known.update(found)
    return [known[word] for word in words]


def _quoted(lexeme: str) -> str:
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def tsquery_text(text: str, *, match_all: bool = False) -> str | None:
    """The raw tsquery for `text`, or None when no word carries meaning.

    `match_all=False` (search): a record matching some of the words is a candidate
    (R-5.10). `match_all=True` (the list's `q` filter): it must match every word.
    A query made only of stop words finds nothing rather than everything.
    """
    words = query_words(text)
    if not words:
        return None
    terms = []
    for lexemes in _lexemes_per_word(words):
        if not all(lexemes):
            continue
        union = sorted(set().union(*lexemes))
        terms.append("(" + " | ".join(_quoted(lexeme) for lexeme in union) + ")")
    if not terms:
        return None
    return (" & " if match_all else " | ").join(terms)


def text_query(text: str, *, match_all: bool = False) -> SearchQuery | None:
    """`tsquery_text` as a query over the stored vector (its lexemes are already stemmed)."""
    raw = tsquery_text(text, match_all=match_all)
    return None if raw is None else SearchQuery(raw, config="simple", search_type="raw")


def fuse_rankings(signals: Mapping[str, Sequence[tuple[str, float]]], *, limit: int) -> list[tuple[str, float]]:
    """One ranking from several named signals (full text now; embeddings later).

    With one signal its own scores stand, so a caller sees a meaningful relevance.
    With more, reciprocal rank fusion: score = sum over signals of 1 / (K + rank).
    Each signal is a list of (record id, score), best first.
    """
    present = {name: ranking for name, ranking in signals.items() if ranking}
    if len(present) <= 1:
        ranking = next(iter(present.values()), [])
        return list(ranking)[:limit]
    fused: dict[str, float] = {}
    for ranking in present.values():
        for position, (record_id, _score) in enumerate(ranking, start=1):
            fused[record_id] = fused.get(record_id, 0.0) + 1.0 / (FUSION_K + position)
    ordered = sorted(fused.items(), key=lambda item: -item[1])
    return ordered[:limit]
