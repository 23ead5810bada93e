"""`createadmin` (R-1.3): a console administrator bound to one organisation."""
from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.core.management import CommandError, call_command

from core_memory.console.models import ConsoleAdministrator
from tests.factories import CONSOLE_PASSWORD, createorg

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_password_hashing")]


def test_createadmin_binds_the_user_and_grants_the_console_permissions(tenant):
    """R-1.3."""
    call_command("createadmin", org=tenant.organisation.id, username="bert", password=CONSOLE_PASSWORD)

    user = get_user_model().objects.get(username="bert")
    assert user.is_staff and not user.is_superuser
    assert user.console_administrator.organisation_id == tenant.organisation.id
    assert user.has_perm("keys.change_apikey")
    assert user.has_perm("stores.change_memorystore")
    assert user.has_perm("audit.view_auditevent")


def test_createadmin_makes_an_administrator_of_that_organisation():
    """R-1.3."""
    organisation_id = createorg("Acme")["organisation_id"]

    call_command("createadmin", "--org", organisation_id, "--username", "beheer", "--password", "l4ng-en-geheim!", stdout=StringIO())

    user = authenticate(username="beheer", password="l4ng-en-geheim!")
    assert user is not None and user.is_staff
    assert ConsoleAdministrator.objects.get(user=user).organisation_id == organisation_id


def test_createadmin_refuses_an_unknown_organisation():
    """R-1.3."""
    with pytest.raises(CommandError, match=r"^No organisation 'org_nope'\.$"):
        call_command("createadmin", "--org", "org_nope", "--username", "beheer", "--password", "l4ng-en-geheim!")

    assert not get_user_model().objects.filter(username="beheer").exists()
    assert not ConsoleAdministrator.objects.exists()
