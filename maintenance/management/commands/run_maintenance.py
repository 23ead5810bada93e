"""`manage.py run_maintenance [--store idx_…] [--now ISO8601]` (R-1.4): the maintenance that beat
and the workers run — contested marking, store lessons, promotion analyses — at once and in the
foreground, with a JSON summary."""
import json
from collections import Counter

from django.core.management.base import BaseCommand, CommandError

from core_memory.base.commands import now_option
from maintenance.selectors import stores_existing
from maintenance.services.jobs import maintenance_job_run
from maintenance.services.planning import maintenance_dispatch

JOB_STATUSES = ("done", "failed", "parked", "cancelled", "skipped")
WRITTEN = {"contradictions": "contested", "store_lesson": "lessons", "promotion": "proposals"}


class Command(BaseCommand):
    help = "Run every store's maintenance that is due now (or the stores named), as if the clock read --now; print a JSON summary."

    def add_arguments(self, parser):
        parser.add_argument(
            "--store", action="append", dest="stores", metavar="INDEX_ID", help="Run this store's maintenance, due or not (repeatable)."
        )
        parser.add_argument("--now", type=str, help="The moment to run as, ISO 8601 with an offset (default: now).")

    def handle(self, *args, stores=None, now=None, **options):
        now = now_option(now)
        if stores:
            missing = sorted(set(stores) - set(stores_existing(index_ids=stores)))
            if missing:
                raise CommandError(f"No store {', '.join(missing)}.")
        dispatch = maintenance_dispatch(now=now, index_ids=stores)
        outcomes = [maintenance_job_run(job_id=job_id, now=now) for job_id in dispatch.job_ids]
        self.stdout.write(json.dumps(_summary(now=now, dispatch=dispatch, outcomes=outcomes)))


def _summary(*, now, dispatch, outcomes) -> dict:
    """Per store: whether it ran, its run, the records it read, and what its jobs did."""
    stores: dict[str, dict] = {
        plan.index_id: {
            "index_id": plan.index_id,
            "state": plan.state,
            "run_id": plan.run_id,
            "analyses": plan.analyses,
            "changed": plan.changed,
            "proposals": plan.proposals,
        }
        for plan in dispatch.plans
    }
    grouped: dict[str, list] = {}
    for outcome in outcomes:
        grouped.setdefault(outcome.index_id, []).append(outcome)
    for index_id in grouped:
        # A recovered job of a store that was not due this time.
        stores.setdefault(index_id, {"index_id": index_id, "state": None, "run_id": None, "analyses": {}, "changed": 0, "proposals": 0})
    for index_id, summary in stores.items():
        done = grouped.get(index_id, [])
        statuses = Counter(outcome.status for outcome in done)
        summary["jobs"] = {status: statuses[status] for status in JOB_STATUSES}
        summary["model_calls"] = sum(outcome.model_calls for outcome in done)
        summary["contested"] = summary["lessons"] = 0
        for outcome in done:
            if outcome.written:
                summary[WRITTEN[outcome.kind]] += outcome.written
        summary["errors"] = dict(sorted(Counter(outcome.error_code for outcome in done if outcome.status == "failed").items()))
    return {"now": now.isoformat(), "stores": [stores[index_id] for index_id in sorted(stores)], "recovered": len(dispatch.recovered)}
