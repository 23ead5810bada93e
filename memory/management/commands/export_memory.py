"""`manage.py export_memory --org org_… [--output FILE]`: every record of an organisation as JSON
Lines (docs/portability.md), which `import_memory` reads back. Progress on stderr."""
import json

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from audit.services import audit_event_record
from core_memory.base.callers import Caller
from core_memory.organisations.models import Organisation
from memory.exporting import records_export_lines

PROGRESS_EVERY = 1000


class Command(BaseCommand):
    help = "Write every record of an organisation (not deleted ones) as JSON Lines; audited as memory.exported."

    def add_arguments(self, parser):
        parser.add_argument("--org", required=True, help="The organisation's id, org_…")
        parser.add_argument("--output", default="-", help="A file to write; '-' (the default) is standard output.")

    def handle(self, *args, org, output, **options):
        organisation = Organisation.objects.filter(id=org).first()
        if organisation is None:
            raise CommandError(f"No organisation {org!r}.")
        # The command's own stdout (not sys.stdout): call_command's caller can take the lines.
        target = self.stdout if output == "-" else open(output, "w", encoding="utf-8")  # noqa: SIM115 — closed below
        count = 0
        try:
            with transaction.atomic():  # one consistent snapshot of the organisation
                for count, line in enumerate(records_export_lines(organisation_id=organisation.id), start=1):
                    target.write(json.dumps(line, ensure_ascii=False) + "\n")
                    if count % PROGRESS_EVERY == 0:
                        self.stderr.write(f"exported {count} records…")
                audit_event_record(
                    caller=Caller.system(organisation_id=organisation.id, actor="command:export_memory"), action="memory.exported", details={"records": count}
                )
        finally:
            if target is not self.stdout:
                target.close()
        self.stderr.write(f"exported {count} records of {organisation.id}")
