"""Console administrators made before webhooks existed get the webhook pages too, as one made now
does (core_memory.console.services.CONSOLE_APP_LABELS): whoever administers an organisation's
records may administer where their events go."""
from django.contrib.auth.management import create_permissions
from django.db import migrations


def grant(apps, schema_editor):
    config = apps.get_app_config("webhooks")
    config.models_module = True
    create_permissions(config, verbosity=0, apps=apps)
    permission_model = apps.get_model("auth", "Permission")
    user_model = apps.get_model("auth", "User")
    permissions = list(permission_model.objects.filter(content_type__app_label="webhooks"))
    for user in user_model.objects.filter(user_permissions__content_type__app_label="memory").distinct():
        user.user_permissions.add(*permissions)


class Migration(migrations.Migration):
    dependencies = [
        ("webhooks", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(grant, migrations.RunPython.noop)]
