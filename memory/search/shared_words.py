"""The shared set's word matches (memory.search.shared) kept in Valkey beside each process's own
copy, so that a process reads a word's matches from PostgreSQL only when no process has read
them at the shared set's current version: a freshly started worker starts warm.

One hash per index and word holds the version the matches were read at and, for each active
shared record holding the word, its id, type, creation time and the word's own scores, exactly
as PostgreSQL gave them. A process takes a word from here only at the version it already keeps
the index's other words at (or, keeping none, at the newest version found here); the search's
own statement checks that version as before, so matches of an older version never decide an
answer. A version a search found stale is never taken from here again by that process: it reads
the word from PostgreSQL and writes it here at the new version.

Without Valkey configured, or when it cannot be reached, every process reads its words itself.
The keys name the database: a version numbers the changes of one database's shared set.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import redis
from django.conf import settings
from django.db import connection

from core_memory.base.redis_clients import redis_client

logger = logging.getLogger(__name__)

# A word's matches outlive no busy hour unused; a new version of the shared set writes them again.
KEPT_SECONDS = 3600
# A word held by more shared records than this is read by each process itself (its value would
# weigh more in Valkey than the statement costs).
MAX_MATCHES = 200_000
_SEPARATOR = "\x1f"


@dataclass(frozen=True)
class Matches:
    """The active shared records holding one word: ids, their scores for the word alone
    (unnormalised and as the search scores), types and creation times (microseconds since 1970)."""

    ids: list[str]
    raw: np.ndarray
    score: np.ndarray
    types: list[str]
    created: np.ndarray


def _client() -> redis.Redis | None:
    return redis_client(settings.REDIS_URL) if settings.REDIS_URL else None


def _key(*, organisation_id: str, index_id: str, term: str) -> str:
    return f"core:shared-words:{connection.settings_dict['NAME']}:{organisation_id}:{index_id}:{term}"


def matches_read(*, organisation_id: str, index_id: str, terms: list[str]) -> dict[str, tuple[int, Matches]]:
    """The words of `terms` some process has written, each with the version read at (one round
    trip); none when Valkey is not there."""
    client = _client()
    if client is None or not terms:
        return {}
    pipeline = client.pipeline(transaction=False)
    for term in terms:
        pipeline.hgetall(_key(organisation_id=organisation_id, index_id=index_id, term=term))
    try:
        values = pipeline.execute()
    except redis.RedisError as error:
        logger.warning("shared_words.unavailable", extra={"error": type(error).__name__})
        return {}
    found = {}
    for term, value in zip(terms, values, strict=True):
        if value:
            found[term] = (int(value[b"version"]), _decoded(value))
    return found


def matches_write(*, organisation_id: str, index_id: str, version: int, found: dict[str, Matches]) -> None:
    """Keeps the words read from PostgreSQL at `version` for every process (one round trip)."""
    client = _client()
    kept = {term: matches for term, matches in found.items() if len(matches.ids) <= MAX_MATCHES}
    if client is None or not kept:
        return
    pipeline = client.pipeline(transaction=False)
    for term, matches in kept.items():
        key = _key(organisation_id=organisation_id, index_id=index_id, term=term)
        pipeline.hset(key, mapping={
            "version": version,
            "ids": _SEPARATOR.join(matches.ids),
            "types": _SEPARATOR.join(matches.types),
            "raw": np.asarray(matches.raw, dtype="<f8").tobytes(),
            "score": np.asarray(matches.score, dtype="<f8").tobytes(),
            "created": np.asarray(matches.created, dtype="<i8").tobytes(),
        })
        pipeline.expire(key, KEPT_SECONDS)
    try:
        pipeline.execute()
    except redis.RedisError as error:
        logger.warning("shared_words.unavailable", extra={"error": type(error).__name__})


def _decoded(value: dict[bytes, bytes]) -> Matches:
    ids = value[b"ids"].decode()
    types = value[b"types"].decode()
    return Matches(
        ids=ids.split(_SEPARATOR) if ids else [],
        raw=np.frombuffer(value[b"raw"], dtype="<f8").astype(np.float64),
        score=np.frombuffer(value[b"score"], dtype="<f8").astype(np.float64),
        types=types.split(_SEPARATOR) if types else [],
        created=np.frombuffer(value[b"created"], dtype="<i8").astype(np.int64),
    )
