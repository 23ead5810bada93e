"""`manage.py run_extraction [--store idx_…] [--now ISO8601]` (R-1.4)."""
import json
from datetime import datetime
from datetime import timezone as dt_timezone
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from extraction.models import ExtractionRun
from tests.extraction.builders import add, conversation, extraction_answer, switch_put
from tests.factories import make_index

pytestmark = pytest.mark.django_db


def test_it_prints_a_json_summary_of_every_due_switch(tenant, other_tenant, fake_model, run_extraction):
    """Every due switch, across organisations, as if the clock read --now."""
    switch_put(tenant.client(), tenant.index.id)
    switch_put(other_tenant.client(), other_tenant.index.id)
    conversation(organisation=tenant.organisation, key=tenant.key, messages=["Ik heet Anna."])
    conversation(organisation=tenant.organisation, key=tenant.key, subject="bert", messages=["Ik heet Bert."])
    fake_model.answer(extraction_answer([add("Heet Anna.")]))
    fake_model.answer(extraction_answer([], usage=(1, 1)))
    now = datetime(2030, 1, 6, 9, 0, tzinfo=dt_timezone.utc)

    summary = run_extraction(now=now)

    runs = {run.switch_id: run.id for run in ExtractionRun.objects.all()}
    assert summary == {
        "now": "2030-01-06T09:00:00+00:00",
        "switches": sorted(
            [
                {
                    "index_id": tenant.index.id,
                    "state": "active",
                    "run_id": runs[tenant.index.id],
                    "threads": 2,
                    "threads_never_read": 0,
                    "windows": {"ready": 2, "failed": 0, "parked": 0, "skipped": 0},
                    "written": 1,
                    "confirmed": 0,
                    "replaced": 0,
                    "errors": {},
                },
                {
                    "index_id": other_tenant.index.id,
                    "state": "active",
                    "run_id": runs[other_tenant.index.id],
                    "threads": 0,
                    "threads_never_read": 0,
                    "windows": {"ready": 0, "failed": 0, "parked": 0, "skipped": 0},
                    "written": 0,
                    "confirmed": 0,
                    "replaced": 0,
                    "errors": {},
                },
            ],
            key=lambda each: each["index_id"],
        ),
        "recovered": 0,
    }
    assert {run.started_at for run in ExtractionRun.objects.all()} == {now}


def test_store_runs_the_named_switches_due_or_not_and_shows_a_stopped_ones_state(tenant, fake_model, run_extraction):
    """R-1.4: all given switches when --store is named."""
    second = make_index(tenant.organisation, name="second")
    switch_put(tenant.client(), tenant.index.id)
    switch_put(tenant.client(), second.id)
    run_extraction()
    tenant.client().put(f"/v1/memory/stores/{second.id}/extraction", {"enabled": False}, format="json")

    summary = run_extraction("--store", tenant.index.id, "--store", second.id)

    assert [(each["index_id"], each["state"], each["run_id"] is not None) for each in summary["switches"]] == sorted(
        [(tenant.index.id, "active", True), (second.id, "off", False)]
    )


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--store", "idx_none"], "No extraction switch on idx_none."),
        (["--now", "2030-01-06T09:00:00"], "--now needs an offset, e.g. 2026-11-30T09:00:00+01:00."),
        (["--now", "tomorrow"], "--now 'tomorrow' is not ISO 8601."),
    ],
)
def test_bad_arguments_stop_it_with_a_message(tenant, arguments, message):
    with pytest.raises(CommandError, match=f"^{message.replace('.', '[.]').replace('+', '[+]')}$"):
        call_command("run_extraction", *arguments, stdout=StringIO())


def test_a_switch_whose_model_is_no_longer_configured_fails_the_run_with_one_line_saying_so(tenant, switch, settings):
    """Issue 20: it exited 0 with `"state": "model_unavailable"` deep in the summary."""
    settings.CORE_MODELS = []
    out = StringIO()

    with pytest.raises(CommandError) as failed:
        call_command("run_extraction", "--store", tenant.index.id, stdout=out)

    assert str(failed.value) == (
        f"Extraction could not do its work: {tenant.index.id}: its model is not offered to the organisation "
        "(not in CORE_MODELS, or not among its offered models)."
    )
    assert json.loads(out.getvalue())["switches"][0]["state"] == "model_unavailable"


def test_a_model_that_cannot_be_reached_fails_the_run_naming_the_failed_windows(tenant, switch, fake_model):
    conversation(organisation=tenant.organisation, key=tenant.key, messages=["Ik heet Anna."])
    fake_model.fail(400)

    with pytest.raises(CommandError, match=f"^Extraction could not do its work: {tenant.index.id}: 1 window failed [(]model_error: 1[)][.]$"):
        call_command("run_extraction", "--store", tenant.index.id, stdout=StringIO())


def test_a_run_that_did_its_work_or_had_none_to_do_succeeds(tenant, switch, fake_model):
    conversation(organisation=tenant.organisation, key=tenant.key, messages=["Ik heet Anna."])
    fake_model.answer(extraction_answer([add("Heet Anna.")]))
    first, second = StringIO(), StringIO()

    call_command("run_extraction", "--store", tenant.index.id, stdout=first)
    call_command("run_extraction", "--store", tenant.index.id, stdout=second)

    assert "error" not in json.loads(first.getvalue()) and "error" not in json.loads(second.getvalue())
