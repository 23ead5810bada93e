"""`manage.py import_memory --org org_… --key key_… [--input FILE] [--index idx_… | --index-map OLD=NEW …] [--origin core|mem0|zep] [--dry-run]`:
JSON Lines of records into an organisation, all or nothing, with the rights of one of its keys
(docs/portability.md). Progress on stderr; the report as JSON on stdout."""
import json
import sys

from django.core.management.base import BaseCommand, CommandError

from core_memory.base.errors import ApplicationError
from core_memory.base.callers import Caller
from core_memory.keys.models import ApiKey
from memory.importing import FORMATS, ImportFailed, records_import
from stores.selectors import index_get_available


class Command(BaseCommand):
    help = "Import JSON Lines of records (Core's export, or mem0's or Zep's) into an organisation; nothing is written if a line fails."

    def add_arguments(self, parser):
        parser.add_argument("--org", required=True, help="The organisation's id, org_…")
        parser.add_argument("--key", required=True, help="A usable key of the organisation whose rights the import has (its write right on each index).")
        parser.add_argument("--input", default="-", help="A JSON Lines file; '-' (the default) is standard input.")
        parser.add_argument("--index", help="Put every line into this index instead of the one each line names.")
        parser.add_argument(
            "--index-map", action="append", default=[], metavar="SOURCE=TARGET",
            help="A line naming index SOURCE (another organisation's) goes into this organisation's TARGET; repeat per index.",
        )
        parser.add_argument("--origin", choices=FORMATS, default="core", help="What wrote the lines: core (export_memory), mem0 or zep.")
        parser.add_argument("--dry-run", action="store_true", help="Check every line and report; write nothing.")

    def handle(self, *args, org, key, input, index, index_map, origin, dry_run, **options):  # noqa: A002
        api_key = ApiKey.objects.for_organisation(org).usable().filter(id=key).first()
        if api_key is None:
            raise CommandError(f"No usable key {key!r} in organisation {org!r}.")
        caller = Caller(key=api_key, actor=f"command:import_memory ({api_key.id})")
        try:
            target = index_get_available(caller=caller, index_id=index, param="--index", right="write") if index else None
        except ApplicationError as error:
            raise CommandError(f"{error.param}: {error.message}") from None
        pairs = [pair.partition("=") for pair in index_map]
        if any(not old or not new for old, _, new in pairs):
            raise CommandError("--index-map: write SOURCE=TARGET, e.g. idx_old=idx_new.")
        source = sys.stdin if input == "-" else open(input, encoding="utf-8")  # noqa: SIM115 — closed below
        try:
            report = records_import(
                caller=caller,
                lines=source,
                format=origin,
                index=target,
                index_map={old: new for old, _, new in pairs},
                dry_run=dry_run,
                progress=lambda number: self.stderr.write(f"read {number} lines…"),
            )
        except ImportFailed as failure:
            self.stdout.write(json.dumps(failure.report.as_dict(), ensure_ascii=False))
            raise CommandError(failure.message) from None
        except ApplicationError as error:
            raise CommandError(f"{error.param}: {error.message}" if error.param else error.message) from None
        finally:
            if source is not sys.stdin:
                source.close()
        self.stdout.write(json.dumps(report, ensure_ascii=False))
        self.stderr.write(("checked" if dry_run else "imported") + f" {report['lines']} lines: {report['created']} created, {report['confirmed']} confirmed, {report['skipped']} skipped, {report['already_imported']} already imported")
