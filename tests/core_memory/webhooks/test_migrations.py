"""The data migration that gives console administrators made before webhooks existed the webhook
pages, as `createadmin` gives them to one made now (core_memory.console.services.CONSOLE_APP_LABELS)."""
from __future__ import annotations

from django.contrib.auth.models import Permission, User
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from core_memory.console.services import CONSOLE_APP_LABELS

BEFORE = ("webhooks", "0001_initial")
GRANTING = ("webhooks", "0002_console_administrators_manage_webhooks")


def _webhook_permissions(user: User) -> set[str]:
    return set(User.objects.get(pk=user.pk).user_permissions.filter(content_type__app_label="webhooks").values_list("codename", flat=True))


def test_administrators_made_before_webhooks_get_the_webhook_pages_and_no_one_else_does(db):
    executor = MigrationExecutor(connection)
    executor.migrate([BEFORE])
    administrator = User.objects.create_user("old-administrator")
    administrator.user_permissions.set(
        Permission.objects.filter(content_type__app_label__in=[label for label in CONSOLE_APP_LABELS if label != "webhooks"])
    )
    bystander = User.objects.create_user("bystander")
    bystander.user_permissions.set(Permission.objects.filter(content_type__app_label="auth"))

    executor.loader.build_graph()
    executor.migrate([GRANTING])

    every = set(Permission.objects.filter(content_type__app_label="webhooks").values_list("codename", flat=True))
    assert {"view_webhooksubscription", "change_webhooksubscription", "view_webhookdelivery"} <= every
    assert _webhook_permissions(administrator) == every
    assert _webhook_permissions(bystander) == set()
    assert User.objects.get(pk=administrator.pk).has_perm("webhooks.change_webhooksubscription")
