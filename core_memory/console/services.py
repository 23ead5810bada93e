from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.contrib.auth.password_validation import validate_password
from django.db import transaction

from core_memory.base.console.models import ConsoleAdministrator
from core_memory.organisations.models import Organisation

# The console's models an administrator works with; what she sees of them is
# limited to her organisation by the admin classes (core_memory.base.console.pages).
CONSOLE_APP_LABELS = ("organisations", "keys", "stores", "memory", "extraction", "audit", "persons", "webhooks")


@transaction.atomic(durable=True)
def console_administrator_create(*, organisation: Organisation, username: str, password: str) -> ConsoleAdministrator:
    user_model = get_user_model()
    validate_password(password)
    user = user_model.objects.create_user(username=username, password=password, is_staff=True)
    user.user_permissions.set(Permission.objects.filter(content_type__app_label__in=CONSOLE_APP_LABELS))
    return ConsoleAdministrator.objects.create(user=user, organisation=organisation)
