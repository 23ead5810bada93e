"""The shared records' best full-text matches for a person's search, without ranking every
shared record that holds a common word (docs/decisions.md "Search").

Every person's search takes the best `depth` shared records by full text beside her own. A
common word is in tens of thousands of them in a large store, and ranking them all was most of
a search's time. A question's rank (ts_rank_cd, cover density, OR of its words) is the weight
of the places in the record where one of its words stands: when no place holds two of the
question's words, the sum of what each word alone scores, and never more than that sum nor
less than the best single word's. So each process keeps, per index and per word (the OR of the
word's lexemes), every active shared record that holds the word with that word's own score,
read once at the shared set's version (memory.models.SharedSetVersion), and a search works out
from them which few records can be among the best `depth`:

- a record holding one of the question's words has the score PostgreSQL will give it, exactly
  (the same places, the same float);
- one holding several has its sum as its likely score (a hair below, for rounding) and the sum
  a hair above as its highest.

The `depth`-th best likely score, ties broken by id as the search breaks them, is the bar:
records holding one word that rank below it, and records holding several whose highest stays
below it, cannot be among the best. PostgreSQL then ranks the few left by primary key, in the
search's one statement, gated on the version: if the shared set changed since, that statement
ranks the whole shared set instead and the answer is still exact (`bounded_settled`). If two
of the question's words stand in one place of a record (one lexeme shared, or a Dutch and an
English stem of one word), its likely score was too high and the bar may be too; the search
sees it in its answer (the `depth`-th it got ranks below the bar) and asks again, exhaustively.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone as dt_timezone

import numpy as np
from django.db import connection

from memory.search.shared_words import Matches, matches_read, matches_write

# Rounding slack for scores summed here from PostgreSQL's single-precision scores.
_SLACK = 1e-6
# So few shared matches PostgreSQL ranks them faster than a bounded statement is made and checked.
RANKED_WHOLE = 1_000
# A process keeps this many indexes' shared words, and up to this many postings per index.
MAX_INDEXES = 32
MAX_POSTINGS = 2_000_000
_EPOCH = datetime(1970, 1, 1, tzinfo=dt_timezone.utc)


@dataclass
class _Term:
    ordinals: np.ndarray  # the records holding the word (positions in _Shared.ids)
    raw: np.ndarray  # ts_rank_cd of the word alone, unnormalised
    score: np.ndarray  # ts_rank_cd of the word alone as the search scores (normalisation 32)


@dataclass
class _Shared:
    """One index's shared records at one version, as far as the words asked so far hold them."""

    version: int
    ids: list[str] = field(default_factory=list)
    ordinal: dict[str, int] = field(default_factory=dict)
    types: list[str] = field(default_factory=list)
    created: list[int] = field(default_factory=list)  # microseconds since 1970
    terms: dict[str, _Term] = field(default_factory=dict)
    postings: int = 0
    stale: bool = False
    # Arrays of the lists above, remade when records were added.
    id_rank: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    sorted_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=object))  # the ids in id order
    by_id: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # their positions in `ids`
    type_array: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=object))
    created_array: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


@dataclass(frozen=True)
class Bounded:
    """The shared records that can be among the best `depth` (ids), at `version`; `bar`: the
    (score, id) the `depth`-th best reaches at least, None when all of them are here."""

    index_id: str
    version: int
    ids: list[str]
    bar: tuple[float, str] | None
    depth: int


_lock = threading.Lock()
_indexes: dict[str, _Shared] = {}
# Per index, the newest version of the shared set this process has seen.
_newest: dict[str, int] = {}


def _microseconds(moment: datetime) -> int:
    return (moment - _EPOCH) // timedelta(microseconds=1)


# One statement: the version and, for each word, its shared records with their scores. A word no
# record holds still answers one row (with the version).
_POSTINGS_SQL = """
SELECT COALESCE((SELECT version FROM memory_sharedsetversion WHERE index_id = %(index)s AND organisation_id = %(organisation)s), 0),
       terms.term, found.id, found.raw, found.score, found.type, found.created_at
FROM unnest(%(terms)s::text[]) AS terms(term)
LEFT JOIN LATERAL (
    SELECT record.id, ts_rank_cd(record.search_vector, to_tsquery('simple', terms.term), 0) AS raw,
           ts_rank_cd(record.search_vector, to_tsquery('simple', terms.term), 32) AS score, record.type, record.created_at
    FROM memory_memoryrecord record
    WHERE record.organisation_id = %(organisation)s AND record.index_id = %(index)s AND record.status = 'active'
      AND record.subject IS NULL AND record.search_vector @@ to_tsquery('simple', terms.term)
) found ON true
"""


def _fetch(*, organisation_id: str, index_id: str, terms: list[str]) -> tuple[int, dict[str, Matches]]:
    with connection.cursor() as cursor:
        cursor.execute(_POSTINGS_SQL, {"index": index_id, "organisation": organisation_id, "terms": terms})
        rows = cursor.fetchall()
    version = rows[0][0] if rows else 0
    found: dict[str, list[tuple]] = {term: [] for term in terms}
    for _version, term, record_id, raw, score, type_name, created_at in rows:
        if record_id is not None:
            found[term].append((record_id, raw, score, type_name, created_at))
    return version, {
        term: Matches(
            ids=[row[0] for row in rows],
            raw=np.array([row[1] for row in rows], dtype=np.float64),
            score=np.array([row[2] for row in rows], dtype=np.float64),
            types=[row[3] for row in rows],
            created=np.array([_microseconds(row[4]) for row in rows], dtype=np.int64),
        )
        for term, rows in found.items()
    }


def _added(shared: _Shared, found: dict[str, Matches]) -> _Shared:
    """`shared` with the words of `found` added: a new one, so that a search reading the old one
    on another thread meanwhile reads it whole."""
    shared = replace(shared, ids=list(shared.ids), ordinal=dict(shared.ordinal), types=list(shared.types),
                     created=list(shared.created), terms=dict(shared.terms))
    for term, matches in found.items():
        ordinals = []
        for record_id, type_name, created in zip(matches.ids, matches.types, matches.created.tolist(), strict=True):
            number = shared.ordinal.get(record_id)
            if number is None:
                number = shared.ordinal[record_id] = len(shared.ids)
                shared.ids.append(record_id)
                shared.types.append(type_name)
                shared.created.append(created)
            ordinals.append(number)
        shared.terms[term] = _Term(ordinals=np.array(ordinals, dtype=np.int64), raw=matches.raw, score=matches.score)
        shared.postings += len(matches.ids)
    # Ties are broken by id: each record's place in id order. The records new to this version are
    # sorted among themselves and merged into the order kept so far (sorting every kept id again
    # on each new word was a tenth of a fresh process's search).
    known = len(shared.by_id)
    if len(shared.ids) > known:
        added = np.array(shared.ids[known:], dtype=object)
        order = np.argsort(added, kind="stable")
        places = np.searchsorted(shared.sorted_ids, added[order])
        shared.sorted_ids = np.insert(shared.sorted_ids, places, added[order])
        shared.by_id = np.insert(shared.by_id, places, np.arange(known, len(shared.ids), dtype=np.int64)[order])
        shared.id_rank = np.empty(len(shared.ids), dtype=np.int64)
        shared.id_rank[shared.by_id] = np.arange(len(shared.ids))
    shared.type_array = np.array(shared.types, dtype=object)
    shared.created_array = np.array(shared.created, dtype=np.int64)
    return shared


def _shared_with(*, organisation_id: str, index_id: str, terms: list[str]) -> _Shared | None:
    """The index's shared records holding `terms`, taking the words not yet kept from what other
    processes read (memory.search.shared_words), reading the rest in one query (a second when
    the shared set changed since the others were read). None when it keeps changing."""
    with _lock:
        shared = _indexes.get(index_id)
        newest = _newest.get(index_id, 0)
    if shared is not None and (shared.stale or shared.postings > MAX_POSTINGS):
        shared = None
    missing = terms if shared is None else [term for term in terms if term not in shared.terms]
    if not missing:
        return shared
    shared, missing = _taken_from_others(shared, organisation_id=organisation_id, index_id=index_id, terms=missing, newest=newest)
    for _attempt in range(2):
        if not missing:
            break
        version, found = _fetch(organisation_id=organisation_id, index_id=index_id, terms=missing)
        _version_seen(index_id, version)
        if shared is not None and shared.version != version:
            # Changed since: the words kept before are of an older version.
            shared, missing = None, terms
            continue
        matches_write(organisation_id=organisation_id, index_id=index_id, version=version, found=found)
        shared, missing = _added(shared or _Shared(version=version), found), []
    if missing:
        return None
    with _lock:
        if len(_indexes) >= MAX_INDEXES and index_id not in _indexes:
            _indexes.pop(next(iter(_indexes)))
        _indexes[index_id] = shared
    return shared


def _taken_from_others(shared: _Shared | None, *, organisation_id: str, index_id: str, terms: list[str], newest: int) -> tuple[_Shared | None, list[str]]:
    """`shared` with those of `terms` that another process read at its version (keeping none: at
    the newest version there, never below one this process saw), and the words still missing."""
    written = matches_read(organisation_id=organisation_id, index_id=index_id, terms=terms)
    versions = [version for version, _matches in written.values() if version >= newest]
    if not versions:
        return shared, terms
    version = shared.version if shared is not None else max(versions)
    taken = {term: matches for term, (at, matches) in written.items() if at == version and at >= newest}
    if not taken:
        return shared, terms
    return _added(shared or _Shared(version=version), taken), [term for term in terms if term not in taken]


def _version_seen(index_id: str, version: int) -> None:
    """Versions only rise: matches written at a lower one than this process saw are stale."""
    with _lock:
        if version > _newest.get(index_id, 0):
            if len(_newest) >= MAX_INDEXES * 4:
                _newest.clear()
            _newest[index_id] = version


def bounded_candidates(
    *,
    organisation_id: str,
    index_id: str,
    terms: list[str],
    types: list[str] | None,
    after: datetime | None,
    before: datetime | None,
    depth: int,
    ranked_whole: int | None = None,
) -> Bounded | None:
    """The shared records that can be among the best `depth` by full text for the OR of `terms`,
    or None when the search had better rank the shared set whole: it cannot be read as kept, or
    it holds no more than `ranked_whole` matches (RANKED_WHOLE unless told)."""
    shared = _shared_with(organisation_id=organisation_id, index_id=index_id, terms=terms)
    if shared is None:
        return None
    parts = [shared.terms[term] for term in terms]
    size = len(shared.ids)
    ordinals = np.concatenate([part.ordinals for part in parts]) if parts else np.zeros(0, dtype=np.int64)
    holds = np.bincount(ordinals, minlength=size)
    total = np.bincount(ordinals, weights=np.concatenate([part.raw for part in parts]), minlength=size) if parts else holds
    single = np.zeros(size, dtype=np.float64)
    for part in parts:
        single[part.ordinals] = part.score
    matched = holds > 0
    if types:
        matched &= np.isin(shared.type_array, types)
    if after is not None:
        matched &= shared.created_array > _microseconds(after)
    if before is not None:
        matched &= shared.created_array < _microseconds(before)
    found = np.flatnonzero(matched)
    if len(found) <= (RANKED_WHOLE if ranked_whole is None else ranked_whole):
        return None
    if len(found) <= depth:
        return Bounded(index_id, shared.version, [shared.ids[number] for number in found], None, depth)
    one = holds[found] == 1
    summed = total[found]
    likely = np.where(one, single[found], _normalised(summed * (1 - _SLACK)) * (1 - _SLACK))
    highest = np.where(one, single[found], _normalised(summed * (1 + _SLACK)) * (1 + _SLACK))
    cut = len(found) - depth
    bar = np.partition(likely, cut)[cut]
    above = int(np.count_nonzero(likely > bar))
    tied = found[likely == bar]
    ranks = shared.id_rank[tied]
    last_rank = np.partition(ranks, depth - above - 1)[depth - above - 1]
    bar_id = shared.ids[int(tied[ranks == last_rank][0])]
    ranks_found = shared.id_rank[found]
    keep = np.where(one, (likely > bar) | ((likely == bar) & (ranks_found <= last_rank)), highest >= bar)
    return Bounded(index_id, shared.version, [shared.ids[number] for number in found[keep]], (float(bar), bar_id), depth)


def _normalised(raw: np.ndarray) -> np.ndarray:
    """ts_rank_cd's normalisation 32: rank / (rank + 1)."""
    return raw / (raw + 1)


def bounded_settled(bounded: Bounded, *, version: int | None, ranked: list[tuple[float, str]]) -> bool:
    """Whether the search's answer is exact: `version` is the shared set's as the search's
    statement read it (None: it read no record), `ranked` the (score, id) of the shared
    records among `bounded.ids` it ranked. At another version the statement ranked the whole
    shared set (exact; what is kept is stale and read again by the next search); at this one the
    `depth`-th best must reach the bar."""
    if version is not None and version != bounded.version:
        _version_seen(bounded.index_id, version)
        with _lock:
            shared = _indexes.get(bounded.index_id)
            if shared is not None and shared.version == bounded.version:
                shared.stale = True
        return True
    if bounded.bar is None:
        return True
    best = sorted(ranked, key=lambda pair: (-pair[0], pair[1]))[: bounded.depth]
    if len(best) < bounded.depth:
        return False
    score, record_id = best[-1]
    bar_score, bar_id = bounded.bar
    return score > bar_score or (score == bar_score and record_id <= bar_id)


def forget() -> None:
    """Drop everything kept (tests)."""
    with _lock:
        _indexes.clear()
        _newest.clear()
