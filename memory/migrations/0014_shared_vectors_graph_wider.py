"""The shared records' HNSW graph built again with ef_construction 256 (docs/decisions.md "Search").

As 0009: only where the vectors' table exists (pgvector); `manage.py embed_records` makes the
table later with every index of the model.
"""
import pgvector.django
from django.db import migrations
from django.db.models import Q

from memory.embedding.storage import TABLE

INDEX = "memory_embedding_shared_hnsw"


def _table_exists(schema_editor) -> bool:
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [TABLE])
        return bool(cursor.fetchone()[0])


def _rebuild(apps, schema_editor, *, ef_construction: int) -> None:
    if not _table_exists(schema_editor):
        return
    schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX}")
    # The graph of a large shared set is built in memory, not slowly on disk.
    schema_editor.execute("SET LOCAL maintenance_work_mem = '1GB'")
    schema_editor.execute(
        f"CREATE INDEX {INDEX} ON {TABLE} USING hnsw (vector halfvec_ip_ops) "
        f"WITH (m = 16, ef_construction = {ef_construction}) WHERE subject IS NULL"
    )


def wider(apps, schema_editor):
    _rebuild(apps, schema_editor, ef_construction=256)


def narrower(apps, schema_editor):
    _rebuild(apps, schema_editor, ef_construction=64)


class Migration(migrations.Migration):

    dependencies = [
        ("memory", "0013_shared_set_version"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveIndex(model_name="recordembedding", name=INDEX),
                migrations.AddIndex(
                    model_name="recordembedding",
                    index=pgvector.django.HnswIndex(
                        condition=Q(subject__isnull=True),
                        ef_construction=256,
                        fields=["vector"],
                        m=16,
                        name=INDEX,
                        opclasses=["halfvec_ip_ops"],
                    ),
                ),
            ],
        ),
        migrations.RunPython(wider, narrower),
    ]
