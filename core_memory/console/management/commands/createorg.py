import json
import zoneinfo

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from core_memory.flows.onboarding import organisation_create
from core_memory.organisations.models import ORGANISATION_CAPABILITIES


class Command(BaseCommand):
    help = "Create an organisation and a key with every capability and every index."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--timezone", default="UTC")
        parser.add_argument("--capability", action="append", default=[], choices=ORGANISATION_CAPABILITIES)
        parser.add_argument("--json", action="store_true", help="Print only the JSON answer.")

    def handle(self, *args, name, timezone, capability, **options):
        if timezone not in zoneinfo.available_timezones():
            raise CommandError(f"Unknown time zone {timezone!r} (use an IANA name such as Europe/Amsterdam).")
        try:
            organisation, key, secret = organisation_create(name=name, timezone=timezone, capabilities=capability)
        except ValidationError as error:
            raise CommandError("; ".join(f"{field}: {' '.join(messages)}" for field, messages in error.message_dict.items())) from error
        answer = {"organisation_id": organisation.id, "key_id": key.id, "key": secret}
        self.stdout.write(json.dumps(answer))
        if not options["json"]:
            self.stderr.write("Keep the key: it is shown only now. Next: curl -H 'Authorization: Bearer <key>' http://127.0.0.1:8000/v1/models")
