"""The most frequent search's one statement, written once in SQL: a person's full-text search
of an index that does not embed, among her records and the shared ones (or hers alone: the
block's past sessions and lessons), without decay.

The pipeline (memory.search.pipeline) builds the same statement through the ORM for every
kind of search; building it (a dozen querysets cloned, filtered and compiled) was a quarter
of this search's time through the API, more than PostgreSQL took to answer it. Here it is
the ORM's statement as it compiles for this case — the same conditions, the same ranking,
the same columns — so the answer is the same, which tests/memory/search/test_hot.py checks
against the ORM's on every filter.

With the shared set's bounded candidates (memory.search.shared) its shared part ranks only
those few, by primary key, while the shared set is still at their version, and every shared
match when it changed since: the ORM's statement for that case (memory.search.candidates).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from django.db import connections, router
from psycopg.postgres import types as postgres_types
from psycopg.pq import Format
from psycopg.types.string import TextLoader

from core_memory.base.callers import Caller
from memory.models import MemoryRecord
from memory.search.candidates import bounded_exact
from memory.search.ranking import Candidate
from memory.search.shared import Bounded
from stores.models import KnowledgeIndex

# A candidate's row: the record's columns (but the two a search never shows), then its scores.
# Only the hits become records: a model object of each of the ~100 candidates cost more than
# ranking them.
FIELDS = tuple(field.attname for field in MemoryRecord._meta.concrete_fields if field.attname not in ("search_vector", "normalised_text"))
_ID, _CREATED, _RETRIEVALS, _TEXT, _TYPE, _SUBJECT = (
    FIELDS.index(name) for name in ("id", "created_at", "retrieval_count", "text", "type", "subject")
)
_EFFECTIVE, _TEXT_SCORE, _SIMILARITY = len(FIELDS), len(FIELDS) + 1, len(FIELDS) + 2
# The fields' own reading from the database, as the ORM applies it (JSON is read as text): for the
# hits only, none of them is ranked on (every candidate's: ~200 JSON texts read a search at 10k, for ~10 shown).
_CONVERTERS = [
    (place, field.from_db_value)
    for place, field in enumerate(MemoryRecord._meta.get_field(name) for name in FIELDS)
    if hasattr(field, "from_db_value")
]
# The moments are read as text and made datetimes by the connection's own reading of them: the
# creation of every candidate (the ranking's recency), the others of the hits only (~200 of a
# search's ~300 at 10k were never shown).
_MOMENTS = [place for place, name in enumerate(FIELDS) if MemoryRecord._meta.get_field(name).get_internal_type() == "DateTimeField"]
_TIMESTAMPTZ = postgres_types["timestamptz"].oid


def _moment_reader(connection):
    """The connection's reading of a moment's text (in its time zone, as the ORM gets it). Django's
    reading parses the text and labels it with the connection's zone; a moment PostgreSQL wrote in
    UTC ("…+00", as Django's sessions ask) is parsed by the standard library's parser, the same
    moment at a tenth of the cost, and labelled alike."""
    loader = connection.connection.adapters.get_loader(_TIMESTAMPTZ, Format.TEXT)(_TIMESTAMPTZ, connection.connection)
    load, labelled = loader.load, hasattr(loader, "timezone")

    def read(text: str | None) -> datetime | None:
        if text is None:
            return None
        if labelled and text.endswith("+00"):
            try:
                return datetime.fromisoformat(text).replace(tzinfo=loader.timezone)
            except ValueError:
                pass
        return load(text.encode())

    return read

# One part of the scope (hers, or the shared ones): its best `depth` ids by full text.
_PART = """(SELECT part.id FROM memory_memoryrecord part
    WHERE part.organisation_id = %(organisation)s AND part.index_id = %(index)s AND NOT (part.status = 'deleted')
      AND {person} AND (part.expires_at IS NULL OR part.expires_at > %(now)s) AND part.status = 'active'{narrowing}
      AND part.search_vector @@ to_tsquery('simple'::regconfig, %(query)s)
    ORDER BY ts_rank_cd(part.search_vector, to_tsquery('simple'::regconfig, %(query)s), 32) DESC, 1 ASC
    LIMIT %(depth)s)"""

# The shared set's version as the statement reads it (memory.models.SharedSetVersion).
SHARED_VERSION = """COALESCE((SELECT version FROM memory_sharedsetversion
    WHERE index_id = %(index)s AND organisation_id = %(organisation)s), 0)"""

# The shared part when bounded: the few by primary key at their version; at another, every match.
_FEW = """(SELECT part.id FROM memory_memoryrecord part
    WHERE part.organisation_id = %(organisation)s AND part.id = ANY(%(few)s) AND {version} = %(version)s
    ORDER BY ts_rank_cd(part.search_vector, to_tsquery('simple'::regconfig, %(query)s), 32) DESC, 1 ASC
    LIMIT %(depth)s)"""

# A candidate's full-text score: its rank when it matches the question, else nothing.
TEXT_SCORE = """CASE WHEN record.search_vector @@ to_tsquery('simple'::regconfig, %(query)s)
         THEN ts_rank_cd(record.search_vector, to_tsquery('simple'::regconfig, %(query)s), 32)
         ELSE 0.0 END"""

_STATEMENT = """SELECT {columns}, record.confidence AS effective_confidence,
    """ + TEXT_SCORE + """ AS text_score,
    NULL AS similarity{version}
FROM memory_memoryrecord record
WHERE record.organisation_id = %(organisation)s AND record.index_id = %(index)s AND NOT (record.status = 'deleted')
  AND {persons}
  AND (record.expires_at IS NULL OR record.expires_at > %(now)s) AND record.status = 'active'{narrowing}
  AND record.id IN ({parts})"""


def narrowing(alias: str, *, types: Sequence[str] | None, after: datetime | None, before: datetime | None) -> str:
    """The search's types and times, as memory.search.scope.narrowed asks them."""
    conditions = ""
    if types:
        conditions += f" AND {alias}.type = ANY(%(types)s)"
    if after is not None:
        conditions += f" AND {alias}.created_at > %(after)s"
    if before is not None:
        conditions += f" AND {alias}.created_at < %(before)s"
    return conditions


_statements: dict[tuple, str] = {}


def person_text_parts(*, types, after, before, bounded: bool) -> tuple[str, str]:
    """The SQL of a person's two parts' best ids by full text (hers, the shared ones), each a
    parenthesised SELECT of `part.id` (the shared one two of them, UNION ALL-ed, when bounded)."""
    part = _PART.replace("{narrowing}", narrowing("part", types=types, after=after, before=before))
    shared = part.replace("{person}", "part.subject IS NULL")
    if bounded:
        changed = shared.replace("\n    ORDER BY", f"\n      AND NOT ({SHARED_VERSION} = %(version)s)\n    ORDER BY")
        shared = f"{_FEW.replace('{version}', SHARED_VERSION)} UNION ALL {changed}"
    return part.replace("{person}", "part.subject = %(subject)s"), shared


def _statement(columns: Sequence[str], *, types, after, before, bounded: bool, shared: bool = True) -> str:
    shape = (tuple(columns), bool(types), after is not None, before is not None, bounded, shared)
    statement = _statements.get(shape)
    if statement is None:
        own, shared_part = person_text_parts(types=types, after=after, before=before, bounded=bounded)
        statement = _statements[shape] = _STATEMENT.format(
            columns=", ".join(f'record."{name}"' for name in columns),
            version=f", {SHARED_VERSION} AS shared_version" if bounded else "",
            narrowing=narrowing("record", types=types, after=after, before=before),
            persons="(record.subject = %(subject)s OR record.subject IS NULL)" if shared else "record.subject = %(subject)s",
            parts=f"{own} UNION ALL {shared_part}" if shared else own,
        )
    return statement


def person_text_rows(
    *,
    columns: Sequence[str],
    caller: Caller,
    index: KnowledgeIndex,
    terms: list[str],
    depth: int,
    now: datetime,
    types: Sequence[str] | None,
    after: datetime | None,
    before: datetime | None,
    bounded: Bounded | None = None,
    shared: bool = True,
) -> list[tuple] | None:
    """The candidates' rows of the caller's person's search (her records and the shared ones;
    hers alone with `shared=False`)
    for the OR of `terms`, as the database answers them (JSON and moments but the creation as
    text: `rows_ranked` reads the fields of the hits alone as the ORM does): `columns` of the
    record, then its effective confidence (its
    confidence: no decay), its full-text score and its similarity (none). With `bounded` (the
    shared set's few that can be among the best), None when they turned out not to hold the best
    (memory.search.shared.bounded_settled): the search asks again without them."""
    parameters = person_text_parameters(
        caller=caller, index=index, terms=terms, depth=depth, now=now, types=types, after=after, before=before, bounded=bounded
    )
    statement = _statement(columns, types=types, after=after, before=before, bounded=bounded is not None, shared=shared)
    rows = candidate_rows_read(statement, parameters, columns=columns)
    if bounded is not None:
        place_id, place_score = columns.index("id"), len(columns) + 1
        if not bounded_exact(bounded, [(row[place_id], row[place_score], row[-1]) for row in rows]):
            return None
        rows = [row[:-1] for row in rows]
    return rows


def person_text_parameters(
    *, caller: Caller, index: KnowledgeIndex, terms: list[str], depth: int, now: datetime, types: Sequence[str] | None,
    after: datetime | None, before: datetime | None, bounded: Bounded | None,
) -> dict:
    """The parameters of `person_text_parts`' SQL (and of the statements around them)."""
    parameters = {
        "organisation": caller.organisation_id, "index": index.pk, "subject": caller.subject, "now": now, "depth": depth,
        "query": " | ".join(terms), "types": list(types or []), "after": after, "before": before,
    }
    if bounded is not None:
        parameters.update(few=bounded.ids, version=bounded.version)
    return parameters


def candidate_rows_read(statement: str, parameters: dict, *, columns: Sequence[str]) -> list[tuple]:
    """The rows of a candidates' statement whose first columns are `columns` of the record: its
    moments as text (JSON too, as the database answers it) but the creation, read as the ORM does."""
    connection = connections[router.db_for_read(MemoryRecord)]
    with connection.cursor() as cursor:
        cursor.cursor.adapters.register_loader("timestamptz", TextLoader)
        cursor.execute(statement, parameters)
        rows = cursor.fetchall()
    if "created_at" in columns:
        place, moment = columns.index("created_at"), _moment_reader(connection)
        rows = [(*row[:place], moment(row[place]), *row[place + 1:]) for row in rows]
    return rows


def rows_ranked(rows: list[tuple]) -> dict:
    """The pipeline's ranking arguments for `person_text_rows`' rows (with `FIELDS` as the columns):
    their candidates, and `hit`, which makes a record of one (its scores as attributes)."""
    by_id = {row[_ID]: row for row in rows}
    candidates = [
        Candidate(
            record_id=row[_ID], text_score=row[_TEXT_SCORE], similarity=row[_SIMILARITY], created_at=row[_CREATED],
            effective_confidence=row[_EFFECTIVE], retrieval_count=row[_RETRIEVALS], text=row[_TEXT], type=row[_TYPE],
            subject=row[_SUBJECT],
        )
        for row in rows
    ]

    readers: dict[str, Callable] = {}

    def hit(record_id: str) -> MemoryRecord:
        row = by_id[record_id]
        alias = router.db_for_read(MemoryRecord)
        values = list(row[: len(FIELDS)])
        for place, convert in _CONVERTERS:
            values[place] = convert(values[place], None, connections[alias])
        moment = readers.get(alias) or readers.setdefault(alias, _moment_reader(connections[alias]))
        for place in _MOMENTS:
            if place != _CREATED:
                values[place] = moment(values[place])
        record = MemoryRecord.from_db(alias, FIELDS, values)
        record.effective_confidence, record.text_score, record.similarity = row[_EFFECTIVE], row[_TEXT_SCORE], row[_SIMILARITY]
        return record

    return {"candidates": candidates, "hit": hit}
