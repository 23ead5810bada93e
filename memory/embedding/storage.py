"""Where vectors live: pgvector, only where PostgreSQL has it (docs/decisions.md "Embeddings").

The machine's own PostgreSQL may lack pgvector (Debian bookworm does not package it), and a
server without it must still migrate and serve every index that does not embed. So the
vectors' table (`memory.RecordEmbedding`) is created only when pgvector 0.8 or later can be
had: by migration memory.0007 when it runs, or later by `manage.py embed_records` (after an
operator installed pgvector). Nothing else ever touches the table unless
`embedding_storage_ready()`.

A server on which embeddings are on (`CORE_EMBEDDINGS` not `off`) and an index embeds, but the
table is missing, does not start: `embedding_storage_check()` raises, naming pgvector, from the
web application and the worker. Creating such an index is refused as well (stores.services).
"""
from __future__ import annotations

import hashlib
import logging

from django.core.exceptions import ImproperlyConfigured
from django.db import DatabaseError, connection, transaction

from core_memory.llm.embeddings import (
    PGVECTOR_LEAST_VERSION,
    PGVECTOR_MISSING,
    embeddings_backend,
    embeddings_enabled,
    pgvector_forget,
    pgvector_version,
)
from core_memory.llm.embedding_models import EmbeddingModel, embedding_model_for
from memory.models import ModelEmbedding, RecordEmbedding
from stores.models import KnowledgeIndex

logger = logging.getLogger(__name__)

EXTENSION = "vector"
TABLE = "memory_recordembedding"
MODEL_TABLE = "memory_modelembedding"
RECORD_TABLE = "memory_memoryrecord"

_ready: dict[str, bool] = {}


def vector_extension_installable(*, database) -> bool:
    """pgvector, recent enough, is installed in the database or available to install."""
    with database.cursor() as cursor:
        cursor.execute(
            "SELECT coalesce(installed_version, default_version) FROM pg_available_extensions WHERE name = %s", [EXTENSION]
        )
        row = cursor.fetchone()
    return row is not None and pgvector_version(row[0]) >= PGVECTOR_LEAST_VERSION


def _table_exists(database) -> bool:
    with database.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [TABLE])
        return bool(cursor.fetchone()[0])


def embedding_storage_create(*, schema_editor, model) -> bool:
    """Create pgvector's extension (when needed and allowed) and the vectors' table; False,
    creating nothing, where pgvector cannot be had. Idempotent. `model` is RecordEmbedding
    (in a migration: its historical model)."""
    database = schema_editor.connection
    if _table_exists(database):
        return True
    if not vector_extension_installable(database=database):
        logger.warning("embeddings.storage.unavailable", extra={"reason": "pgvector 0.8+ not available"})
        return False
    try:
        # Creating an extension that is not "trusted" needs a superuser; a DBA may have done it.
        with transaction.atomic(using=database.alias):
            schema_editor.execute(f"CREATE EXTENSION IF NOT EXISTS {EXTENSION}")
    except DatabaseError:
        logger.warning("embeddings.storage.unavailable", extra={"reason": "CREATE EXTENSION vector refused"})
        return False
    _vector_table_create(schema_editor=schema_editor, model=model, table=TABLE)
    _ready.pop(database.alias, None)
    pgvector_forget()
    return True


def _vector_table_create(*, schema_editor, model, table: str) -> None:
    schema_editor.create_model(model)
    # The only link to the record: the database, not Django, removes a vector with its record.
    schema_editor.execute(
        f"ALTER TABLE {table} ADD CONSTRAINT {table}_record_cascade FOREIGN KEY (record_id) "
        f"REFERENCES {RECORD_TABLE} (id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED"
    )


def model_embedding_storage_create(*, schema_editor, model) -> bool:
    """The table of the vectors by models served elsewhere (`memory.ModelEmbedding`, `model` its
    historical model in a migration), made beside the in-process model's where that exists
    (pgvector is there); False, creating nothing, where it does not. Idempotent."""
    database = schema_editor.connection
    if not _table_exists(database):
        return False
    with database.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [MODEL_TABLE])
        if cursor.fetchone()[0]:
            return True
    _vector_table_create(schema_editor=schema_editor, model=model, table=MODEL_TABLE)
    return True


def space_graph_name(space: str) -> str:
    return f"memory_model_embedding_hnsw_{hashlib.sha256(space.encode()).hexdigest()[:12]}"


def space_graph_ensure(*, space: str, dimensions: int) -> None:
    """The HNSW graph of one embedding model's vectors: a partial index over the vectors of its
    space, cast to its dimension (pgvector indexes vectors of one dimension only), which a search
    of the space walks when it orders by the same cast (memory.search.vectors). Made before the
    first vector of the space is written; concurrently, so writes of other spaces go on, unless
    the caller is inside a transaction. Idempotent."""
    name = space_graph_name(space)
    concurrently = "" if connection.in_atomic_block else "CONCURRENTLY "
    with connection.cursor() as cursor:
        # Asked first: CREATE INDEX locks the table's writes even when the index exists.
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [name])
        if cursor.fetchone()[0]:
            return
        cursor.execute(
            f"CREATE INDEX {concurrently}IF NOT EXISTS {name} ON {MODEL_TABLE} "
            f"USING hnsw ((vector::halfvec({int(dimensions)})) halfvec_ip_ops) WITH (m = 16, ef_construction = 64) "
            f"WHERE space = %s",
            [space],
        )


def embedding_storage_drop(*, schema_editor) -> None:
    schema_editor.execute(f"DROP TABLE IF EXISTS {MODEL_TABLE}")
    schema_editor.execute(f"DROP TABLE IF EXISTS {TABLE}")
    _ready.pop(schema_editor.connection.alias, None)


def embedding_storage_ready() -> bool:
    """The vectors' table exists (asked once per process and database)."""
    alias = connection.alias
    if alias not in _ready:
        _ready[alias] = _table_exists(connection)
    return _ready[alias]


def embedding_storage_forget() -> None:
    """Ask again next time (after the table was created or dropped outside this process)."""
    _ready.clear()


def index_embeds(index: KnowledgeIndex) -> bool:
    """Searches and writes of this index use vectors: it asks for them, its embedding model can
    embed (the one inside Core unless CORE_EMBEDDINGS is off; one served elsewhere while it is
    configured), and the server can store them (else the index falls back to full text only)."""
    return bool(index.embeddings) and index_embedding_model(index) is not None and embedding_storage_ready()


def index_embedding_model(index: KnowledgeIndex) -> EmbeddingModel | None:
    """The model whose vectors the index's searches compare: its `embedding_model` (while it
    switches to another, still this one), or None when that cannot embed now."""
    return embedding_model_for(index.embedding_model)


def embedding_storage_check() -> None:
    """Start-up: refuse to run with embeddings on, an index that embeds, and nowhere to keep vectors."""
    if not embeddings_enabled() or embedding_storage_ready():
        return
    index = KnowledgeIndex.objects.unscoped().live().filter(embeddings=True).values_list("id", flat=True).first()
    if index is not None:
        raise ImproperlyConfigured(
            f"Index {index} has embeddings on and CORE_EMBEDDINGS is {embeddings_backend()!r}, but {PGVECTOR_MISSING}"
        )


def embedding_storage_ensure() -> bool:
    """The vectors' table, created now if pgvector has become available since migrating."""
    if embedding_storage_ready():
        return True
    with transaction.atomic(), connection.schema_editor(atomic=False) as schema_editor:
        created = embedding_storage_create(schema_editor=schema_editor, model=RecordEmbedding)
        if created:
            model_embedding_storage_create(schema_editor=schema_editor, model=ModelEmbedding)
    embedding_storage_forget()
    return created
