"""The Response model now lives in the threads app (threads 0002 renamed its table)."""
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('turns', '0001_initial'),
        ('threads', '0002_response_moves_here'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[migrations.DeleteModel(name='Response')]),
    ]
