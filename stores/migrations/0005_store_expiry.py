from django.db import migrations, models

import stores.models


class Migration(migrations.Migration):
    dependencies = [
        ("stores", "0004_index_conversation"),
    ]

    operations = [
        migrations.AddField(
            model_name="memorystore",
            name="expiry",
            field=models.JSONField(default=stores.models.default_expiry, verbose_name="expiry"),
        ),
    ]
