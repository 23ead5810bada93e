"""`manage.py run_maintenance [--store idx_…] [--now ISO8601]` (R-1.4), beat's dispatcher, when a
store is due (R-9.1), durable jobs (R-12.4), the monthly limit (R-8.9), and a run's cost growing
with what changed, not with the store (issue 9)."""
from __future__ import annotations

from datetime import datetime, timedelta
from datetime import timezone as dt_timezone
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from core_memory.beat import BEAT_SCHEDULE
from core_memory.celery import app as celery_app
from maintenance.models import MaintenanceJob, MaintenanceRun
from maintenance.selectors import store_maintenance_status
from maintenance.services.jobs import maintenance_job_run
from maintenance.services.planning import maintenance_dispatch, maintenance_jobs_recover, maintenance_store_plan
from maintenance.tasks import maintenance_dispatch_task
from memory.models import MemoryRecord
from memory.services.rules import text_normalise
from tests.maintenance.builders import CONTRADICTIONS, contradictions, sections

pytestmark = pytest.mark.django_db

NO_JOBS = {"done": 0, "failed": 0, "parked": 0, "cancelled": 0, "skipped": 0}


def test_it_prints_a_json_summary_of_every_due_store(tenant, other_tenant, write, fake_model, run_maintenance):
    """R-1.4: every due store, across organisations, as if the clock read --now."""
    delft, leiden = write("Woont in Delft", subject="anna"), write("Woont in Leiden", subject="anna")
    fake_model.answer(contradictions((delft.id, leiden.id)), format_name=CONTRADICTIONS)
    now = datetime(2030, 1, 6, 9, 0, tzinfo=dt_timezone.utc)

    summary = run_maintenance(now=now)

    runs = {run.index_id: run.id for run in MaintenanceRun.objects.all()}
    analyses = {"contested": True, "lessons": False, "promotion": False, "helper_model": True}
    assert summary == {
        "now": "2030-01-06T09:00:00+00:00",
        "stores": sorted(
            [
                {
                    "index_id": tenant.index.id, "state": "planned", "run_id": runs[tenant.index.id], "analyses": analyses,
                    "changed": 2, "proposals": 0, "jobs": {**NO_JOBS, "done": 1}, "model_calls": 1, "contested": 1,
                    "lessons": 0, "errors": {},
                },
                {
                    "index_id": other_tenant.index.id, "state": "planned", "run_id": runs[other_tenant.index.id], "analyses": analyses,
                    "changed": 0, "proposals": 0, "jobs": NO_JOBS, "model_calls": 0, "contested": 0, "lessons": 0, "errors": {},
                },
            ],
            key=lambda each: each["index_id"],
        ),
        "recovered": 0,
    }
    run = MaintenanceRun.objects.get(index=tenant.index)
    assert (run.started_at, run.finished_at, run.jobs, run.pending, run.contested, run.changed) == (now, now, 1, 0, 1, 2)


def test_a_store_runs_every_maintenance_interval(tenant, fake_model, run_maintenance, settings):
    """R-9.1: once run, a store is due again CORE_MAINTENANCE_MINUTES later; `--store` runs it anyway."""
    settings.CORE_MAINTENANCE_MINUTES = 60
    now = timezone.now()
    assert [store["index_id"] for store in run_maintenance(now=now)["stores"]] == [tenant.index.id]

    assert run_maintenance(now=now + timedelta(minutes=59))["stores"] == []
    assert [store["index_id"] for store in run_maintenance(now=now + timedelta(minutes=60))["stores"]] == [tenant.index.id]
    assert [store["index_id"] for store in run_maintenance("--store", tenant.index.id, now=now)["stores"]] == [tenant.index.id]


def test_a_store_whose_maintenance_is_off_or_whose_index_is_deleted_is_never_due(tenant, other_tenant, fake_model, run_maintenance):
    """R-9.1, R-4.1."""
    sections(tenant.index, maintenance={"enabled": False})
    other_tenant.client().delete(f"/v1/indexes/{other_tenant.index.id}")

    assert run_maintenance()["stores"] == []


@pytest.mark.parametrize(
    "arguments, message",
    [(("--store", "idx_unknown"), "No store idx_unknown."), (("--now", "yesterday"), "is not ISO 8601"), (("--now", "2030-01-06T09:00:00"), "needs an offset")],
)
def test_it_refuses_an_unknown_store_or_a_time_without_offset(tenant, arguments, message):
    with pytest.raises(CommandError, match=message):
        call_command("run_maintenance", *arguments, stdout=StringIO())


def test_beat_dispatches_maintenance_every_minute_and_its_task_plans_due_stores(tenant, fake_model, monkeypatch):
    """R-1.4: beat calls the same code; the dispatch task hands each job to a worker."""
    assert BEAT_SCHEDULE["maintenance-dispatch"]["task"] == "maintenance.tasks.maintenance_dispatch_task"
    # On the Celery app itself: its configuration is read once per process, so a Django setting
    # changed after an earlier test in this process has read it would not reach it.
    monkeypatch.setitem(celery_app.conf, "task_always_eager", True)
    tenant_write = MemoryRecord.objects.create
    for city in ("Delft", "Leiden"):
        text = f"Woont in {city}"
        tenant_write(organisation=tenant.organisation, index=tenant.index, subject="anna", type="fact", text=text,
                     normalised_text=text_normalise(text), changed_at=timezone.now())

    result = maintenance_dispatch_task.apply().get()

    assert result == {"runs": 1, "jobs": 1}
    assert MaintenanceJob.objects.get().status == "done"


def test_a_job_whose_claim_ran_out_is_handed_out_again_and_one_still_held_is_not(tenant, write, fake_model):
    """R-12.4: the worker holding it died; once its lease passed it is queued again."""
    write("Woont in Delft", subject="anna"), write("Woont in Leiden", subject="anna")
    (job_id,) = maintenance_store_plan(index_id=tenant.index.id, force=True).job_ids
    MaintenanceJob.objects.update(status="running", attempts=1, lease_until=timezone.now() + timedelta(minutes=1))
    assert maintenance_jobs_recover() == []

    MaintenanceJob.objects.update(lease_until=timezone.now() - timedelta(seconds=1))
    assert maintenance_jobs_recover() == [job_id]

    assert maintenance_job_run(job_id=job_id).status == "done"
    assert maintenance_job_run(job_id=job_id).status == "skipped"
    assert (MaintenanceJob.objects.get().attempts, len(fake_model.requests)) == (2, 1)


def test_a_job_claimed_three_times_without_finishing_fails(tenant, write, fake_model):
    write("Woont in Delft", subject="anna"), write("Woont in Leiden", subject="anna")
    (job_id,) = maintenance_store_plan(index_id=tenant.index.id, force=True).job_ids
    MaintenanceJob.objects.update(status="running", attempts=3, lease_until=timezone.now() - timedelta(seconds=1))

    outcome = maintenance_job_run(job_id=job_id)

    assert (outcome.status, outcome.error_code, fake_model.requests) == ("failed", "attempts_exhausted", [])


def test_at_the_monthly_token_limit_jobs_are_parked_until_the_next_month(tenant, write, fake_model, run_store):
    """R-8.9, R-9.3 ("each lesson is a metered model call"): no call at the limit."""
    tenant.organisation.monthly_token_limit = 50
    tenant.organisation.save()
    now = timezone.now()
    write("Woont in Delft", subject="anna"), write("Woont in Leiden", subject="anna")
    fake_model.answer(contradictions(usage=(45, 10)), format_name=CONTRADICTIONS)
    run_store(now=now)
    write("Werkt in Delft", subject="bram"), write("Werkt in Leiden", subject="bram")

    parked = run_store(now=now)
    next_month = (now.replace(day=1) + timedelta(days=32)).replace(day=2)
    resumed = run_store(now=next_month)

    assert (parked["jobs"]["parked"], resumed["jobs"]["done"], len(fake_model.requests)) == (1, 1, 2)


def test_a_model_that_does_not_answer_fails_the_job_and_the_next_run_tries_again(tenant, write, fake_model, run_store):
    """A passing failure (`model_error`) is retried at the next run while attempts last."""
    write("Woont in Delft", subject="anna"), write("Woont in Leiden", subject="anna")
    fake_model.fail(500, times=4)

    failed = run_store()
    retried = run_store()

    assert (failed["errors"], retried["jobs"]["done"]) == ({"model_error": 1}, 1)


def test_a_run_costs_queries_and_calls_by_what_changed_not_by_the_store(tenant, other_tenant, fake_model, run_maintenance):
    """Issue 9: a store ten times larger, the same change: the same queries and model calls."""

    def store(index, size: int) -> None:
        MemoryRecord.objects.bulk_create(
            MemoryRecord(
                organisation=index.organisation, index=index, subject=f"person-{number % 50}", type="fact",
                text=f"Record {number} over onderwerp {number % 7}", normalised_text=f"record {number} over onderwerp {number % 7}",
                changed_at=timezone.now(),
            )
            for number in range(size)
        )
        run_maintenance("--store", index.id)
        # As if the run was long ago: only what changes next is new to the next one.
        MemoryRecord.objects.filter(index=index).update(updated_at=timezone.now() - timedelta(hours=1))

    def changed_run(index) -> tuple[int, int]:
        for number in range(3):
            text = f"Record {1000 + number} over onderwerp {number}"
            MemoryRecord.objects.create(organisation=index.organisation, index=index, subject=f"person-{number}", type="fact",
                                        text=text, normalised_text=text_normalise(text), changed_at=timezone.now())
        calls = len(fake_model.requests)
        with CaptureQueriesContext(connection) as queries:
            run_maintenance("--store", index.id)
        return len(queries), len(fake_model.requests) - calls

    store(tenant.index, 100)
    store(other_tenant.index, 1000)

    small, large = changed_run(tenant.index), changed_run(other_tenant.index)

    assert small == large
    assert small[1] == 3


def test_dispatch_plans_each_due_store_in_its_own_transaction_and_skips_others(tenant, other_tenant, fake_model):
    maintenance_store_plan(index_id=tenant.index.id, force=True)

    dispatch = maintenance_dispatch()

    assert [plan.index_id for plan in dispatch.plans] == [other_tenant.index.id]


def test_planning_a_deleted_or_unknown_store_plans_nothing(tenant, fake_model):
    assert maintenance_store_plan(index_id="idx_unknown", force=True).state == "missing"


def test_the_console_reads_a_stores_maintenance_its_clock_last_run_and_jobs(tenant, write, fake_model, run_store):
    """R-10.3: what the console's maintenance card shows (maintenance.selectors.store_maintenance_status)."""
    empty = store_maintenance_status(index=tenant.index)
    assert (empty.state, empty.last_run, empty.jobs) == (None, None, {**dict.fromkeys(MaintenanceJob.Status.values, 0)})
    write("Woont in Delft", subject="anna"), write("Woont in Leiden", subject="anna")
    summary = run_store()

    status = store_maintenance_status(index=tenant.index)

    assert (status.last_run.id, status.last_run.contested, status.state.contested_through is not None) == (summary["run_id"], 0, True)
    assert status.jobs == {**dict.fromkeys(MaintenanceJob.Status.values, 0), "done": 1}


def test_a_store_run_without_a_helper_model_fails_the_command_with_one_line_saying_so(tenant, settings):
    """Issue 20: with no helper model it marked nothing and exited 0 (`"helper_model": false` in the summary)."""
    settings.CORE_HELPER_MODEL = ""
    out = StringIO()

    with pytest.raises(CommandError) as failed:
        call_command("run_maintenance", "--store", tenant.index.id, stdout=out)

    assert str(failed.value) == (
        f"Maintenance could not do its work: {tenant.index.id}: no helper model is offered to its organisation "
        "(CORE_HELPER_MODEL or its helper_model), so contradictions and lessons were not looked for."
    )
    assert '"helper_model": false' in out.getvalue()


def test_failed_jobs_fail_the_command_naming_them(tenant, write, fake_model):
    write("Woont in Delft", subject="anna"), write("Woont in Leiden", subject="anna")
    fake_model.fail(500, times=4)

    with pytest.raises(CommandError, match=f"^Maintenance could not do its work: {tenant.index.id}: 1 job failed [(]model_error: 1[)][.]$"):
        call_command("run_maintenance", "--store", tenant.index.id, stdout=StringIO())


def test_a_store_whose_maintenance_is_off_is_no_failure(tenant, settings):
    """Off is a choice, not work left undone."""
    settings.CORE_HELPER_MODEL = ""
    sections(tenant.index, maintenance={"enabled": False})

    call_command("run_maintenance", "--store", tenant.index.id, stdout=StringIO())
