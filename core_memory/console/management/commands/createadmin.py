from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import IntegrityError

from core_memory.console.services import console_administrator_create
from core_memory.organisations.models import Organisation


class Command(BaseCommand):
    help = "Make a console administrator of one organisation (R-1.3)."

    def add_arguments(self, parser):
        parser.add_argument("--org", required=True)
        parser.add_argument("--username", required=True)
        parser.add_argument("--password", required=True)

    def handle(self, *args, org, username, password, **options):
        organisation = Organisation.objects.filter(id=org).first()
        if organisation is None:
            raise CommandError(f"No organisation {org!r}.")
        try:
            administrator = console_administrator_create(organisation=organisation, username=username, password=password)
        except ValidationError as error:
            raise CommandError("; ".join(error.messages)) from error
        except IntegrityError as error:
            raise CommandError(f"The username {username!r} is taken.") from error
        self.stdout.write(f"{administrator.user.username} administers {organisation.id}: log in at /console/")
