"""`manage.py run_maintenance [--store idx_…] [--now ISO8601]`: the maintenance that beat and the
workers run — contested marking, store lessons, promotion analyses — at once and in the
foreground, with a JSON summary (core_memory.base.work.commands)."""
from collections import Counter

from core_memory.base.work.commands import WorkCommand, failures_told
from maintenance.selectors import stores_existing
from maintenance.services.jobs import maintenance_job_run
from maintenance.services.planning import maintenance_dispatch

JOB_STATUSES = ("done", "failed", "parked", "cancelled", "skipped")
WRITTEN = {"contradictions": "contested", "store_lesson": "lessons", "promotion": "proposals"}


class Command(WorkCommand):
    help = "Run every store's maintenance that is due now (or the stores named), as if the clock read --now; print a JSON summary."
    store_help = "Run this store's maintenance, due or not (repeatable)."
    owners = "stores"
    missing = "No store {}."
    failure = "Maintenance could not do its work"

    def existing(self, index_ids):
        return stores_existing(index_ids=index_ids)

    def dispatch(self, *, now, index_ids):
        return maintenance_dispatch(now=now, index_ids=index_ids)

    def run_unit(self, *, unit_id, now):
        return maintenance_job_run(job_id=unit_id, now=now)

    def plan_summary(self, plan, index_id) -> dict:
        """Whether the store ran, its run, and the records it read."""
        if plan is None:
            return {"index_id": index_id, "state": None, "run_id": None, "analyses": {}, "changed": 0, "proposals": 0}
        return {
            "index_id": index_id,
            "state": plan.state,
            "run_id": plan.run_id,
            "analyses": plan.analyses,
            "changed": plan.changed,
            "proposals": plan.proposals,
        }

    def outcomes_summarise(self, entry, outcomes) -> None:
        """What the store's jobs did."""
        statuses = Counter(outcome.status for outcome in outcomes)
        entry["jobs"] = {status: statuses[status] for status in JOB_STATUSES}
        entry["model_calls"] = sum(outcome.model_calls for outcome in outcomes)
        entry["contested"] = entry["lessons"] = 0
        for outcome in outcomes:
            if outcome.written:
                entry[WRITTEN[outcome.kind]] += outcome.written
        entry["errors"] = dict(sorted(Counter(outcome.error_code for outcome in outcomes if outcome.status == "failed").items()))

    def owner_problem(self, entry) -> str | None:
        """A store that ran without a helper model (contradictions and lessons need one), or jobs
        that failed."""
        if entry["state"] == "planned" and not entry["analyses"].get("helper_model"):
            return (
                "no helper model is offered to its organisation (CORE_HELPER_MODEL or its helper_model), "
                "so contradictions and lessons were not looked for"
            )
        if entry["jobs"]["failed"]:
            return failures_told(entry["jobs"]["failed"], "job", entry["errors"])
        return None
