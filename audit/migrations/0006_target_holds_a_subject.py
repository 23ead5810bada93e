"""An event's target holds what the API accepts as a person's subject: 255 characters (a
`person.updated` event of a 201-character subject failed with a 500)."""
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [("audit", "0005_pg_temp_last_and_named_scrubs")]

    operations = [
        migrations.AlterField(
            model_name="auditevent",
            name="target",
            field=models.CharField(blank=True, default="", max_length=255, verbose_name="target"),
        ),
    ]
