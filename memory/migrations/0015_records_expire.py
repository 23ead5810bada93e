from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0014_shared_vectors_graph_wider"),
    ]

    operations = [
        migrations.AddField(
            model_name="historicalmemoryrecord",
            name="expires_at",
            field=models.DateTimeField(blank=True, null=True, verbose_name="expires at"),
        ),
        migrations.AddField(
            model_name="memoryrecord",
            name="expires_at",
            field=models.DateTimeField(blank=True, null=True, verbose_name="expires at"),
        ),
        migrations.AddIndex(
            model_name="memoryrecord",
            index=models.Index(
                condition=models.Q(("expires_at__isnull", False), ("status", "active")), fields=["expires_at"], name="memory_expiring"
            ),
        ),
    ]
