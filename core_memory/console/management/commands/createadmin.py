import getpass
import sys

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import IntegrityError

from core_memory.console.services import console_administrator_create
from core_memory.organisations.models import Organisation


class Command(BaseCommand):
    help = "Make a console administrator of one organisation. Without --password it asks for one."

    def add_arguments(self, parser):
        parser.add_argument("--org", required=True)
        parser.add_argument("--username", required=True)
        parser.add_argument("--password", help="Omit it to be asked (typed twice, not echoed, kept out of shell history).")

    def handle(self, *args, org, username, password=None, **options):
        organisation = Organisation.objects.filter(id=org).first()
        if organisation is None:
            raise CommandError(f"No organisation {org!r}.")
        if password is None:
            password = self._ask_password()
        try:
            administrator = console_administrator_create(organisation=organisation, username=username, password=password)
        except ValidationError as error:
            raise CommandError("; ".join(error.messages)) from error
        except IntegrityError as error:
            raise CommandError(f"The username {username!r} is taken.") from error
        self.stdout.write(f"{administrator.user.username} administers {organisation.id}: log in at /console/")

    def _ask_password(self) -> str:
        if not sys.stdin.isatty():
            raise CommandError("Give --password, or run createadmin in a terminal to be asked for one.")
        password = getpass.getpass("Password: ")
        if not password:
            raise CommandError("The password may not be empty.")
        if getpass.getpass("Password (again): ") != password:
            raise CommandError("The passwords differ.")
        return password
