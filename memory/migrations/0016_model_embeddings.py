"""Vectors by embedding models served elsewhere: in Django's state always, in the database only
where the in-process model's vectors' table is (pgvector is there; memory.embedding.storage).
`manage.py embed_records` creates both later, once pgvector is installed."""
import django.db.models.deletion
import pgvector.django.halfvec
from django.db import migrations, models

from memory.embedding.storage import MODEL_TABLE, model_embedding_storage_create


def create_where_pgvector(apps, schema_editor):
    model_embedding_storage_create(schema_editor=schema_editor, model=apps.get_model("memory", "ModelEmbedding"))


def drop(apps, schema_editor):
    schema_editor.execute(f"DROP TABLE IF EXISTS {MODEL_TABLE}")


class Migration(migrations.Migration):

    dependencies = [
        ('memory', '0015_records_expire'),
        ('organisations', '0005_offered_retrieval_models'),
        ('stores', '0006_index_models'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[migrations.CreateModel(
            name='ModelEmbedding',
            fields=[
                ('id', models.BigAutoField(primary_key=True, serialize=False)),
                ('subject', models.CharField(blank=True, max_length=255, null=True)),
                ('type', models.CharField(max_length=40)),
                ('created_at', models.DateTimeField()),
                ('space', models.CharField(max_length=120)),
                ('text_digest', models.CharField(max_length=64)),
                ('vector', pgvector.django.halfvec.HalfVectorField()),
                ('embedded_at', models.DateTimeField()),
                ('index', models.ForeignKey(db_constraint=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='stores.knowledgeindex')),
                ('organisation', models.ForeignKey(db_constraint=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='organisations.organisation')),
                ('record', models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='memory.memoryrecord')),
            ],
            options={
                'verbose_name': 'record embedding by a model served elsewhere',
                'verbose_name_plural': 'record embeddings by models served elsewhere',
                'indexes': [models.Index(fields=['index', 'space', 'subject'], name='memory_model_embedding_scope')],
                'constraints': [models.UniqueConstraint(fields=('record', 'space'), name='memory_model_embedding_once')],
            },
        )]),
        # After the state has the model, so that the function reads it.
        migrations.RunPython(create_where_pgvector, drop),
    ]
