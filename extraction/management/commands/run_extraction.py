"""`manage.py run_extraction [--store idx_…] [--now ISO8601]` (R-1.4): the extraction that
beat and the workers run, at once and in the foreground, with a JSON summary."""
import json
from collections import Counter

from django.core.management.base import BaseCommand, CommandError

from core_memory.base.commands import now_option
from extraction.selectors import switches_existing
from extraction.services.planning import extraction_dispatch
from extraction.services.windows import extraction_window_run


class Command(BaseCommand):
    help = "Run every due extraction switch now (or the ones named), as if the clock read --now; print a JSON summary."

    def add_arguments(self, parser):
        parser.add_argument(
            "--store", action="append", dest="stores", metavar="INDEX_ID", help="Run this store's switch, due or not (repeatable)."
        )
        parser.add_argument("--now", type=str, help="The moment to run as, ISO 8601 with an offset (default: now).")

    def handle(self, *args, stores=None, now=None, **options):
        now = now_option(now)
        if stores:
            missing = sorted(set(stores) - set(switches_existing(index_ids=stores)))
            if missing:
                raise CommandError(f"No extraction switch on {', '.join(missing)}.")
        dispatch = extraction_dispatch(now=now, index_ids=stores)
        outcomes = [extraction_window_run(window_id=window_id, now=now) for window_id in dispatch.window_ids]
        self.stdout.write(json.dumps(_summary(now=now, dispatch=dispatch, outcomes=outcomes)))


def _summary(*, now, dispatch, outcomes) -> dict:
    """Per store: its state and run, the threads it read, and what its windows did."""
    stores: dict[str, dict] = {
        plan.index_id: {
            "index_id": plan.index_id,
            "state": plan.state,
            "run_id": plan.run_id,
            "threads": plan.threads_read,
            "threads_never_read": plan.threads_never_read,
        }
        for plan in dispatch.plans
    }
    grouped: dict[str, list] = {}
    for outcome in outcomes:
        grouped.setdefault(outcome.index_id, []).append(outcome)
    for index_id in grouped:
        # A recovered window of a store that was not due this time.
        stores.setdefault(index_id, {"index_id": index_id, "state": None, "run_id": None, "threads": 0, "threads_never_read": 0})
    for index_id, summary in stores.items():
        done = grouped.get(index_id, [])
        statuses = Counter(outcome.status for outcome in done)
        summary["windows"] = {status: statuses[status] for status in ("ready", "failed", "parked", "skipped")}
        for count in ("written", "confirmed", "replaced"):
            summary[count] = sum(getattr(outcome, count) for outcome in done)
        summary["errors"] = dict(sorted(Counter(outcome.error_code for outcome in done if outcome.error_code).items()))
    return {
        "now": now.isoformat(),
        "switches": [stores[index_id] for index_id in sorted(stores)],
        "recovered": len(dispatch.recovered),
    }
