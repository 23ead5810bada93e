"""`manage.py audit_verify [--org org_…]`: checks every organisation's audit hash chain.

Prints a JSON report per chain (its head hash can be kept elsewhere as an anchor) and exits
with status 1 when any chain is broken.
"""
import json

from django.core.management.base import BaseCommand, CommandError

from audit.chain import audit_chains_verify
from audit.verification import audit_verification_record


class Command(BaseCommand):
    help = "Check that no audit event was changed, removed or inserted out of turn."

    def add_arguments(self, parser):
        parser.add_argument("--org", dest="organisation_id", help="check only this organisation's chain")

    def handle(self, *args, organisation_id=None, **options):
        reports = audit_chains_verify(organisation_id=organisation_id)
        summary = {"intact": all(report.intact for report in reports), "chains": [report.as_dict() for report in reports]}
        self.stdout.write(json.dumps(summary, indent=2))
        if organisation_id is None:
            audit_verification_record(intact=summary["intact"])
        if not summary["intact"]:
            raise CommandError("An audit chain is broken; see the report above.")
