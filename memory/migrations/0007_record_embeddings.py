"""Vectors of records: in Django's state always, in the database only with pgvector.

A server without pgvector 0.8+ migrates past this without the table (memory.embedding.storage);
`manage.py embed_records` creates it later, once pgvector is installed. A later migration
that changes this table must therefore check that it exists first.
"""
import django.db.models.deletion
import pgvector.django
from django.db import migrations, models

from memory.embedding.storage import embedding_storage_create, embedding_storage_drop


def create_where_pgvector(apps, schema_editor):
    embedding_storage_create(schema_editor=schema_editor, model=apps.get_model("memory", "RecordEmbedding"))


def drop(apps, schema_editor):
    embedding_storage_drop(schema_editor=schema_editor)


class Migration(migrations.Migration):

    dependencies = [
        ("memory", "0006_scoped_indexes"),
        ("organisations", "0001_initial"),
        ("stores", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="RecordEmbedding",
                    fields=[
                        (
                            "record",
                            models.OneToOneField(
                                db_constraint=False,
                                on_delete=django.db.models.deletion.DO_NOTHING,
                                primary_key=True,
                                related_name="+",
                                serialize=False,
                                to="memory.memoryrecord",
                            ),
                        ),
                        ("subject", models.CharField(blank=True, max_length=255, null=True)),
                        ("type", models.CharField(max_length=40)),
                        ("created_at", models.DateTimeField()),
                        ("model", models.CharField(max_length=100)),
                        ("text_digest", models.CharField(max_length=64)),
                        ("vector", pgvector.django.HalfVectorField(dimensions=384)),
                        ("embedded_at", models.DateTimeField()),
                        (
                            "index",
                            models.ForeignKey(
                                db_constraint=False,
                                on_delete=django.db.models.deletion.DO_NOTHING,
                                related_name="+",
                                to="stores.knowledgeindex",
                            ),
                        ),
                        (
                            "organisation",
                            models.ForeignKey(
                                db_constraint=False,
                                on_delete=django.db.models.deletion.DO_NOTHING,
                                related_name="+",
                                to="organisations.organisation",
                            ),
                        ),
                    ],
                    options={
                        "verbose_name": "record embedding",
                        "verbose_name_plural": "record embeddings",
                        "indexes": [
                            models.Index(fields=["index", "subject"], name="memory_embedding_scope"),
                            pgvector.django.HnswIndex(
                                ef_construction=64,
                                fields=["vector"],
                                m=16,
                                name="memory_embedding_hnsw",
                                opclasses=["halfvec_ip_ops"],
                            ),
                        ],
                    },
                ),
            ],
        ),
        # After the state has the model, so that the function reads it.
        migrations.RunPython(create_where_pgvector, drop),
    ]
