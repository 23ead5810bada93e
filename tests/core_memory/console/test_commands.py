"""`createadmin` (R-1.3): a console administrator bound to one organisation."""
from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.core.management import CommandError, call_command

from core_memory.base.console.models import ConsoleAdministrator
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


class _Terminal(StringIO):
    def isatty(self) -> bool:
        return True


def test_createadmin_asks_for_the_password_when_it_is_not_given(tenant, monkeypatch):
    """R-1.3, issue 14: a password typed at the prompt (twice) instead of on the command line."""
    answers = iter(["l4ng-en-geheim!", "l4ng-en-geheim!"])
    prompts = []
    monkeypatch.setattr("sys.stdin", _Terminal())
    monkeypatch.setattr("getpass.getpass", lambda prompt: prompts.append(prompt) or next(answers))

    call_command("createadmin", "--org", tenant.organisation.id, "--username", "beheer", stdout=StringIO())

    assert prompts == ["Password: ", "Password (again): "]
    assert authenticate(username="beheer", password="l4ng-en-geheim!") is not None


def test_createadmin_refuses_two_different_passwords_and_makes_nobody(tenant, monkeypatch):
    """R-1.3."""
    answers = iter(["l4ng-en-geheim!", "l4ng-en-geheim?"])
    monkeypatch.setattr("sys.stdin", _Terminal())
    monkeypatch.setattr("getpass.getpass", lambda prompt: next(answers))

    with pytest.raises(CommandError, match=r"^The passwords differ\.$"):
        call_command("createadmin", "--org", tenant.organisation.id, "--username", "beheer")

    assert not get_user_model().objects.filter(username="beheer").exists()


def test_createadmin_without_a_terminal_asks_for_the_password_option(tenant, monkeypatch):
    """R-1.3: a script with no terminal gets a clear error rather than a hanging prompt."""
    monkeypatch.setattr("sys.stdin", StringIO())

    with pytest.raises(CommandError, match=r"^Give --password, or run createadmin in a terminal to be asked for one\.$"):
        call_command("createadmin", "--org", tenant.organisation.id, "--username", "beheer")

    assert not get_user_model().objects.filter(username="beheer").exists()
