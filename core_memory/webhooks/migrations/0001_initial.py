
import core_memory.base.ids
import django.contrib.postgres.fields
import django.db.models.deletion
import functools
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('organisations', '0004_rate_limit_bounds'),
    ]

    operations = [
        migrations.CreateModel(
            name='WebhookEvent',
            fields=[
                ('started_at', models.DateTimeField(verbose_name='started at')),
                ('finished_at', models.DateTimeField(blank=True, null=True, verbose_name='finished at')),
                ('pending', models.PositiveIntegerField(default=0, verbose_name='pending')),
                ('errors', models.PositiveIntegerField(default=0, verbose_name='errors')),
                ('parked', models.PositiveIntegerField(default=0, verbose_name='parked')),
                ('id', models.CharField(default=functools.partial(core_memory.base.ids.new_id, *('msg',), **{}), editable=False, max_length=40, primary_key=True, serialize=False)),
                ('kind', models.CharField(max_length=40, verbose_name='event')),
                ('subject', models.CharField(blank=True, max_length=255, null=True, verbose_name='person')),
                ('payload', models.JSONField()),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('organisation', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='organisations.organisation')),
            ],
            options={
                'verbose_name': 'webhook event',
                'verbose_name_plural': 'webhook events',
            },
        ),
        migrations.CreateModel(
            name='WebhookSubscription',
            fields=[
                ('id', models.CharField(default=functools.partial(core_memory.base.ids.new_id, *('whk',), **{}), editable=False, max_length=40, primary_key=True, serialize=False)),
                ('url', models.URLField(max_length=2000, verbose_name='address')),
                ('events', django.contrib.postgres.fields.ArrayField(base_field=models.CharField(max_length=40), size=None, verbose_name='events')),
                ('description', models.CharField(blank=True, default='', max_length=200, verbose_name='description')),
                ('secret', models.CharField(editable=False, max_length=100)),
                ('status', models.CharField(choices=[('active', 'active'), ('paused', 'paused')], default='active', max_length=16, verbose_name='status')),
                ('paused_reason', models.CharField(blank=True, default='', max_length=500, verbose_name='why paused')),
                ('paused_at', models.DateTimeField(blank=True, null=True, verbose_name='paused at')),
                ('created_at', models.DateTimeField(auto_now_add=True, verbose_name='created at')),
                ('updated_at', models.DateTimeField(auto_now=True, verbose_name='updated at')),
                ('organisation', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='organisations.organisation')),
            ],
            options={
                'verbose_name': 'webhook',
                'verbose_name_plural': 'webhooks',
            },
        ),
        migrations.CreateModel(
            name='WebhookDelivery',
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
                ('id', models.CharField(default=functools.partial(core_memory.base.ids.new_id, *('dlv',), **{}), editable=False, max_length=40, primary_key=True, serialize=False)),
                ('status', models.CharField(choices=[('queued', 'queued'), ('running', 'running'), ('delivered', 'delivered'), ('failed', 'failed')], default='queued', max_length=16, verbose_name='status')),
                ('next_attempt_at', models.DateTimeField(blank=True, null=True, verbose_name='next attempt at')),
                ('organisation', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='organisations.organisation')),
                ('run', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='deliveries', to='webhooks.webhookevent', verbose_name='event')),
                ('subscription', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='deliveries', to='webhooks.webhooksubscription')),
            ],
            options={
                'verbose_name': 'webhook delivery',
                'verbose_name_plural': 'webhook deliveries',
            },
        ),
        migrations.CreateModel(
            name='WebhookAttempt',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('number', models.PositiveSmallIntegerField(verbose_name='attempt')),
                ('at', models.DateTimeField(verbose_name='at')),
                ('status_code', models.PositiveSmallIntegerField(blank=True, null=True, verbose_name='status code')),
                ('duration_ms', models.PositiveIntegerField(default=0, verbose_name='duration (ms)')),
                ('error_code', models.CharField(blank=True, default='', max_length=64, verbose_name='error code')),
                ('error_message', models.CharField(blank=True, default='', max_length=500, verbose_name='error')),
                ('organisation', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='organisations.organisation')),
                ('delivery', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='log', to='webhooks.webhookdelivery')),
            ],
            options={
                'verbose_name': 'webhook attempt',
                'verbose_name_plural': 'webhook attempts',
                'ordering': ['delivery', 'number'],
                'indexes': [models.Index(fields=['delivery', 'number'], name='webhooks_attempt_delivery')],
            },
        ),
        migrations.AddIndex(
            model_name='webhookevent',
            index=models.Index(condition=models.Q(('subject__isnull', False)), fields=['organisation', 'subject'], name='webhooks_event_subject'),
        ),
        migrations.AddIndex(
            model_name='webhookevent',
            index=models.Index(fields=['created_at'], name='webhooks_event_created'),
        ),
        migrations.AddIndex(
            model_name='webhooksubscription',
            index=models.Index(fields=['organisation', '-id'], name='webhooks_subscription_org'),
        ),
        migrations.AddIndex(
            model_name='webhookdelivery',
            index=models.Index(fields=['subscription', '-id'], name='webhooks_delivery_log'),
        ),
        migrations.AddIndex(
            model_name='webhookdelivery',
            index=models.Index(condition=models.Q(('next_attempt_at__isnull', False), ('status', 'failed')), fields=['next_attempt_at'], name='webhooks_delivery_retry'),
        ),
        migrations.AddIndex(
            model_name='webhookdelivery',
            index=models.Index(condition=models.Q(('status__in', ['queued', 'running'])), fields=['status', 'queued_at'], name='webhooks_delivery_open'),
        ),
    ]
