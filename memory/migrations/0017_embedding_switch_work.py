"""Re-embedding an index on a model switch as durable work: its runs and its batches."""

import core_memory.base.ids
import django.db.models.deletion
import functools
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('memory', '0016_model_embeddings'),
        ('organisations', '0005_offered_retrieval_models'),
        ('stores', '0006_index_models'),
    ]

    operations = [
        migrations.CreateModel(
            name='EmbeddingSwitchRun',
            fields=[
                ('started_at', models.DateTimeField(verbose_name='started at')),
                ('finished_at', models.DateTimeField(blank=True, null=True, verbose_name='finished at')),
                ('pending', models.PositiveIntegerField(default=0, verbose_name='pending')),
                ('errors', models.PositiveIntegerField(default=0, verbose_name='errors')),
                ('parked', models.PositiveIntegerField(default=0, verbose_name='parked')),
                ('id', models.CharField(default=functools.partial(core_memory.base.ids.new_id, *('erun',), **{}), editable=False, max_length=40, primary_key=True, serialize=False)),
                ('model', models.CharField(max_length=100, verbose_name='embedding model')),
                ('records', models.PositiveIntegerField(default=0, verbose_name='records to embed')),
                ('embedded', models.PositiveIntegerField(default=0, verbose_name='records embedded')),
                ('index', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='embedding_switch_runs', to='stores.knowledgeindex')),
                ('organisation', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='organisations.organisation')),
            ],
            options={
                'verbose_name': 'embedding switch run',
                'verbose_name_plural': 'embedding switch runs',
            },
        ),
        migrations.CreateModel(
            name='EmbeddingBatch',
            fields=[
                ('attempts', models.PositiveSmallIntegerField(default=0, verbose_name='attempts')),
                ('error_code', models.CharField(blank=True, default='', max_length=64, verbose_name='error code')),
                ('error_message', models.CharField(blank=True, default='', max_length=500, verbose_name='error')),
                ('claim_token', models.UUIDField(blank=True, editable=False, null=True)),
                ('lease_until', models.DateTimeField(blank=True, editable=False, null=True)),
                ('input_tokens', models.PositiveIntegerField(default=0, verbose_name='input tokens')),
                ('output_tokens', models.PositiveIntegerField(default=0, verbose_name='output tokens')),
                ('written', models.PositiveIntegerField(default=0, verbose_name='written')),
                ('queued_at', models.DateTimeField(verbose_name='queued at')),
                ('started_at', models.DateTimeField(blank=True, null=True, verbose_name='started at')),
                ('finished_at', models.DateTimeField(blank=True, null=True, verbose_name='finished at')),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('id', models.CharField(default=functools.partial(core_memory.base.ids.new_id, *('ebat',), **{}), editable=False, max_length=40, primary_key=True, serialize=False)),
                ('model', models.CharField(max_length=100, verbose_name='embedding model')),
                ('record_ids', models.JSONField(default=list, verbose_name='records')),
                ('status', models.CharField(choices=[('queued', 'queued'), ('running', 'running'), ('done', 'done'), ('failed', 'failed'), ('cancelled', 'cancelled')], default='queued', max_length=16, verbose_name='status')),
                ('index', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='embedding_batches', to='stores.knowledgeindex')),
                ('organisation', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='organisations.organisation')),
                ('run', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='batch_set', to='memory.embeddingswitchrun')),
            ],
            options={
                'verbose_name': 'embedding batch',
                'verbose_name_plural': 'embedding batches',
            },
        ),
        migrations.AddIndex(
            model_name='embeddingswitchrun',
            index=models.Index(fields=['index', '-started_at'], name='embedding_switch_run_latest'),
        ),
        migrations.AddIndex(
            model_name='embeddingbatch',
            index=models.Index(fields=['index', 'status'], name='embedding_batch_status'),
        ),
        migrations.AddIndex(
            model_name='embeddingbatch',
            index=models.Index(condition=models.Q(('status__in', ['queued', 'running'])), fields=['status', 'lease_until'], name='embedding_batch_stale'),
        ),
        migrations.AddConstraint(
            model_name='embeddingbatch',
            constraint=models.CheckConstraint(condition=models.Q(('status__in', ['queued', 'running', 'done', 'failed', 'cancelled'])), name='embedding_batch_status_known'),
        ),
    ]
