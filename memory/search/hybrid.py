"""A person's hybrid search's two statements, written once in SQL: her full-text candidates
(read while the question is being embedded), then every candidate — those, and the nearest by
meaning of hers and of the shared ones — with both its scores, in an index whose vectors are the
in-process model's, without decay.

The pipeline (memory.search.pipeline) builds the same two statements through the ORM for every
kind of search (memory.search.candidates, memory.search.vectors, memory.search.scope); here they
are the ORM's statements as they compile for this case — the same conditions, the same ordering
of the vectors (hers scanned exactly, the shared set's by its HNSW graph), the same columns — so
the answer is the same, which tests/memory/search/test_hybrid_statement.py checks against the
ORM's on every filter. Their full-text parts are memory.search.hot's.
"""
from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import numpy as np
from pgvector import HalfVector

from core_memory.base.callers import Caller
from memory.search.candidates import bounded_exact
from memory.search.hot import (
    FIELDS,
    SHARED_VERSION,
    TEXT_SCORE,
    candidate_rows_read,
    narrowing,
    person_text_parameters,
    person_text_parts,
)
from memory.search.shared import Bounded
from stores.models import KnowledgeIndex

_RANK = "ts_rank_cd(part.search_vector, to_tsquery('simple'::regconfig, %(query)s), 32)"

# The full-text candidates with their rank and the shared set's version (the bounded ones' check).
_TEXT = "{own} UNION ALL {shared}"

# The vectors a search may compare (memory.search.scope.vectors_in_scope): of her records and the
# shared ones, in the asked types and times, not of a record expired and not yet ended.
_VECTORS = """{alias}.organisation_id = %(organisation)s AND {alias}.index_id = %(index)s
      AND NOT ({alias}.record_id IN (SELECT expired.id FROM memory_memoryrecord expired
        WHERE expired.organisation_id = %(organisation)s AND expired.expires_at <= %(now)s
          AND expired.index_id = %(index)s AND expired.status = 'active'))
      AND ({alias}.subject = %(subject)s OR {alias}.subject IS NULL){narrowing}"""

# One part's nearest ids by meaning: `+ 0` keeps the ordering off the HNSW indexes (an exact scan).
_NEAREST = """(SELECT near.record_id FROM memory_recordembedding near
    WHERE {vectors} AND {person}
    ORDER BY {distance} ASC LIMIT %(depth)s)"""

_STATEMENT = """SELECT {columns}, record.confidence AS effective_confidence,
    {text_score} AS text_score,
    {similarity} AS similarity
FROM memory_memoryrecord record
WHERE record.organisation_id = %(organisation)s AND record.index_id = %(index)s AND NOT (record.status = 'deleted')
  AND (record.subject = %(subject)s OR record.subject IS NULL)
  AND (record.expires_at IS NULL OR record.expires_at > %(now)s) AND record.status = 'active'{narrowing}
  AND record.id IN ({candidates})"""

_SIMILARITY = """(SELECT ((own.vector <#> %(vector)s) * -1) FROM memory_recordembedding own
      WHERE {own_vectors} AND own.record_id = record.id LIMIT 1)"""

_TEXTS = """(SELECT found.id FROM memory_memoryrecord found
    WHERE found.organisation_id = %(organisation)s AND found.id = ANY(%(texts)s))"""

_statements: dict[tuple, str] = {}


def _shape(**shape) -> tuple:
    return tuple(sorted(shape.items()))


def _text_statement(*, types, after, before, bounded: bool) -> str:
    shape = _shape(kind="text", types=bool(types), after=after is not None, before=before is not None, bounded=bounded)
    statement = _statements.get(shape)
    if statement is None:
        own, shared = person_text_parts(types=types, after=after, before=before, bounded=bounded)
        statement = _statements[shape] = _TEXT.format(own=own, shared=shared).replace(
            "SELECT part.id FROM", f"SELECT part.id, {_RANK}, {SHARED_VERSION} FROM"
        )
    return statement


def _statement(columns: Sequence[str], *, types, after, before, text: bool, vector: bool, exhaustive: bool) -> str:
    shape = _shape(
        columns=tuple(columns), types=bool(types), after=after is not None, before=before is not None, text=text, vector=vector,
        exhaustive=exhaustive,
    )
    statement = _statements.get(shape)
    if statement is None:

        def vectors(alias: str) -> str:
            return _VECTORS.format(alias=alias, narrowing=narrowing(alias, types=types, after=after, before=before))

        candidates, similarity = [_TEXTS], "NULL::double precision"
        if vector:
            distance = "(near.vector <#> %(vector)s)"
            candidates += [
                _NEAREST.format(vectors=vectors("near"), person="near.subject = %(subject)s", distance=f"({distance} + 0)"),
                _NEAREST.format(
                    vectors=vectors("near"), person="near.subject IS NULL", distance=f"({distance} + 0)" if exhaustive else distance
                ),
            ]
            similarity = _SIMILARITY.format(own_vectors=vectors("own"))
        statement = _statements[shape] = _STATEMENT.format(
            columns=", ".join(f'record."{name}"' for name in columns),
            text_score=TEXT_SCORE if text else "0.0::double precision",
            similarity=similarity,
            narrowing=narrowing("record", types=types, after=after, before=before),
            candidates=" UNION ALL ".join(candidates),
        )
    return statement


def person_text_found(
    *, caller: Caller, index: KnowledgeIndex, terms: list[str], depth: int, now: datetime, types: Sequence[str] | None,
    after: datetime | None, before: datetime | None, bounded: Bounded | None = None,
) -> list[str] | None:
    """The ids of the best `depth` of her records and of the shared ones by full text for the OR of
    `terms` (none without terms); with `bounded` (memory.search.shared), None when the bounded
    candidates turned out not to hold the best: the search asks again without them."""
    if not terms:
        return []
    parameters = person_text_parameters(
        caller=caller, index=index, terms=terms, depth=depth, now=now, types=types, after=after, before=before, bounded=bounded
    )
    rows = candidate_rows_read(_text_statement(types=types, after=after, before=before, bounded=bounded is not None), parameters, columns=())
    if bounded is not None and not bounded_exact(bounded, rows):
        return None
    return [row[0] for row in rows]


def person_hybrid_rows(
    *, caller: Caller, index: KnowledgeIndex, terms: list[str], found: list[str], query_vector: np.ndarray | None, depth: int,
    now: datetime, types: Sequence[str] | None, after: datetime | None, before: datetime | None, exhaustive: bool = False,
) -> list[tuple]:
    """The candidates' rows of her hybrid search, as memory.search.hot's `rows_ranked` takes them
    (`FIELDS`, then the effective confidence, the full-text score and the similarity): the records
    `found` by full text (`person_text_found`) and the `depth` nearest `query_vector` of hers
    (scanned exactly) and of the shared ones (by the HNSW graph; exactly when `exhaustive`); with no
    vector (the model did not give one), those found by full text alone, with no similarity."""
    parameters = person_text_parameters(
        caller=caller, index=index, terms=terms, depth=depth, now=now, types=types, after=after, before=before, bounded=None
    )
    parameters.update(texts=found, vector=None if query_vector is None else HalfVector(query_vector).to_text())
    statement = _statement(
        FIELDS, types=types, after=after, before=before, text=bool(terms), vector=query_vector is not None, exhaustive=exhaustive
    )
    return candidate_rows_read(statement, parameters, columns=FIELDS)
