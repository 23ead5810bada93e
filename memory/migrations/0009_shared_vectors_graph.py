"""The shared records' vectors in an HNSW graph of their own (docs/decisions.md "Search").

The vectors' table exists only where pgvector does (0007): the index is made only where the
table is; `manage.py embed_records` makes the table later with every index of the model.
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


def create_where_table(apps, schema_editor):
    if _table_exists(schema_editor):
        model = apps.get_model("memory", "RecordEmbedding")
        schema_editor.add_index(model, next(index for index in model._meta.indexes if index.name == INDEX))


def drop(apps, schema_editor):
    schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX}")


class Migration(migrations.Migration):

    dependencies = [
        ("memory", "0008_fewer_indexes"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddIndex(
                    model_name="recordembedding",
                    index=pgvector.django.HnswIndex(
                        condition=Q(subject__isnull=True),
                        ef_construction=64,
                        fields=["vector"],
                        m=16,
                        name=INDEX,
                        opclasses=["halfvec_ip_ops"],
                    ),
                ),
            ],
        ),
        migrations.RunPython(create_where_table, drop),
    ]
