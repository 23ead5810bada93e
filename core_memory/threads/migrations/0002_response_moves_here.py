"""The Response model moves from the turns flow to the threads app (docs/decisions.md "Layers"):
the same table, renamed; only Django's idea of where the model lives changes."""
import functools

import django.db.models.deletion
from django.db import migrations, models

import core_memory.base.ids


class Migration(migrations.Migration):

    dependencies = [
        ('agents', '0001_initial'),
        ('keys', '0001_initial'),
        ('organisations', '0001_initial'),
        ('threads', '0001_initial'),
        ('turns', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    "ALTER TABLE turns_response RENAME TO threads_response",
                    reverse_sql="ALTER TABLE threads_response RENAME TO turns_response",
                ),
            ],
            state_operations=[
                migrations.CreateModel(
                    name='Response',
                    fields=[
                        ('id', models.CharField(default=functools.partial(core_memory.base.ids.new_id, *('resp',), **{}), editable=False, max_length=40, primary_key=True, serialize=False)),
                        ('subject', models.CharField(blank=True, max_length=255, null=True, verbose_name='person')),
                        ('model', models.CharField(max_length=200, verbose_name='model')),
                        ('status', models.CharField(choices=[('in_progress', 'in progress'), ('completed', 'completed'), ('failed', 'failed'), ('incomplete', 'incomplete')], default='in_progress', max_length=16, verbose_name='status')),
                        ('usage', models.JSONField(blank=True, default=dict, verbose_name='usage')),
                        ('trace', models.JSONField(blank=True, default=dict, verbose_name='trace')),
                        ('error', models.JSONField(blank=True, null=True, verbose_name='error')),
                        ('model_calls', models.PositiveSmallIntegerField(default=0, verbose_name='model calls')),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('completed_at', models.DateTimeField(blank=True, null=True, verbose_name='completed at')),
                        ('agent_version', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='responses', to='agents.agentversion')),
                        ('key', models.ForeignKey(db_constraint=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name='responses', to='keys.apikey')),
                        ('organisation', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='responses', to='organisations.organisation')),
                        ('thread', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='responses', to='threads.thread')),
                    ],
                    options={
                        'verbose_name': 'response',
                        'verbose_name_plural': 'responses',
                        'indexes': [models.Index(fields=['organisation', '-id'], name='response_org_id')],
                    },
                ),
            ],
        ),
    ]
