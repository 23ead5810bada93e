"""`manage.py run_extraction [--store idx_…] [--now ISO8601]`: the extraction that beat and the
workers run, at once and in the foreground, with a JSON summary (core_memory.base.work.commands)."""
from collections import Counter

from core_memory.base.work.commands import WorkCommand, failures_told
from extraction.selectors import switches_existing
from extraction.services.planning import extraction_dispatch
from extraction.services.windows import extraction_window_run

WINDOW_STATUSES = ("ready", "failed", "parked", "skipped")
COUNTS = ("written", "confirmed", "replaced")
# Why a switch in each stopped state cannot run (the console says the same in its own words).
STOPPED = {
    "author_unavailable": "the key it runs under is revoked, expired or deleted; re-send the switch with a usable key",
    "model_unavailable": "its model is not offered to the organisation (not in CORE_MODELS, or not among its offered models)",
    "objects_missing": "its connector was deleted or its index is gone; re-send the switch",
}


class Command(WorkCommand):
    help = "Run every due extraction switch now (or the ones named), as if the clock read --now; print a JSON summary."
    store_help = "Run this store's switch, due or not (repeatable)."
    owners = "switches"
    missing = "No extraction switch on {}."
    failure = "Extraction could not do its work"

    def existing(self, index_ids):
        return switches_existing(index_ids=index_ids)

    def dispatch(self, *, now, index_ids):
        return extraction_dispatch(now=now, index_ids=index_ids)

    def run_unit(self, *, unit_id, now):
        return extraction_window_run(window_id=unit_id, now=now)

    def plan_summary(self, plan, index_id) -> dict:
        """The switch's state and run, and the threads it read."""
        if plan is None:
            return {"index_id": index_id, "state": None, "run_id": None, "threads": 0, "threads_never_read": 0}
        return {
            "index_id": index_id,
            "state": plan.state,
            "run_id": plan.run_id,
            "threads": plan.threads_read,
            "threads_never_read": plan.threads_never_read,
        }

    def outcomes_summarise(self, entry, outcomes) -> None:
        """What the switch's windows did."""
        statuses = Counter(outcome.status for outcome in outcomes)
        entry["windows"] = {status: statuses[status] for status in WINDOW_STATUSES}
        for count in COUNTS:
            entry[count] = sum(getattr(outcome, count) for outcome in outcomes)
        entry["errors"] = dict(sorted(Counter(outcome.error_code for outcome in outcomes if outcome.error_code).items()))

    def owner_problem(self, entry) -> str | None:
        """A stopped switch, or windows that failed."""
        if entry["state"] in STOPPED:
            return STOPPED[entry["state"]]
        if entry["windows"]["failed"]:
            return failures_told(entry["windows"]["failed"], "window", entry["errors"])
        return None
