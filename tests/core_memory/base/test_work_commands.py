"""The command base of durable work (core_memory.base.work.commands): what every kind's
foreground command (`run_extraction`, `run_maintenance`) does around its own steps."""
import json
from io import StringIO

import pytest
from django.core.management.base import CommandError

from core_memory.base.work.commands import WorkCommand
from core_memory.base.work.dispatch import Dispatch


class Plan:
    def __init__(self, index_id, unit_ids):
        self.index_id, self.unit_ids = index_id, unit_ids


class Outcome:
    def __init__(self, index_id, status):
        self.index_id, self.status = index_id, status


class Kind(WorkCommand):
    """A kind of work whose stores are idx_a and idx_b; idx_b's plan has two units, and one
    unit of idx_c (not due) was recovered."""

    store_help = "Run this store, due or not."
    owners = "stores"
    missing = "No store {}."
    failure = "The kind could not do its work"
    error = None
    problems: dict = {}

    def existing(self, index_ids):
        return [index_id for index_id in index_ids if index_id in ("idx_a", "idx_b")]

    def dispatch(self, *, now, index_ids):
        return Dispatch(plans=[Plan("idx_b", ["u1", "u2"]), Plan("idx_a", [])], recovered=["u3"])

    def run_unit(self, *, unit_id, now):
        return Outcome("idx_c" if unit_id == "u3" else "idx_b", "done")

    def plan_summary(self, plan, index_id):
        return {"index_id": index_id, "planned": plan is not None}

    def outcomes_summarise(self, entry, outcomes):
        entry["done"] = sum(outcome.status == "done" for outcome in outcomes)

    def owner_problem(self, entry):
        return self.problems.get(entry["index_id"])

    def summary(self, **arguments):
        summary = super().summary(**arguments)
        return {**summary, "error": self.error} if self.error else summary


def test_the_summary_lists_each_owner_once_with_what_its_units_did_and_a_recovered_units_owner_too():
    out = StringIO()
    Kind(stdout=out).handle(now="2026-11-30T09:00:00+01:00", stores=None)

    assert json.loads(out.getvalue()) == {
        "now": "2026-11-30T09:00:00+01:00",
        "stores": [
            {"index_id": "idx_a", "planned": True, "done": 0},
            {"index_id": "idx_b", "planned": True, "done": 2},
            {"index_id": "idx_c", "planned": False, "done": 1},
        ],
        "recovered": 1,
    }


def test_a_store_that_names_nothing_to_run_is_refused_before_anything_runs():
    with pytest.raises(CommandError, match="No store idx_x."):
        Kind(stdout=StringIO()).handle(now=None, stores=["idx_a", "idx_x"])


def test_a_summary_with_an_error_is_printed_and_the_command_fails_with_that_one_line():
    """How a kind says it cannot run (e.g. no usable model): exit 1, one line on stderr."""
    out = StringIO()
    command = Kind(stdout=out)
    command.error = "No usable model is configured."

    with pytest.raises(CommandError, match="^No usable model is configured.$"):
        command.handle(now="2026-11-30T09:00:00+01:00", stores=None)
    assert json.loads(out.getvalue())["error"] == "No usable model is configured."


def test_each_owner_whose_work_was_not_done_is_named_in_the_one_line_it_fails_with():
    out = StringIO()
    command = Kind(stdout=out)
    command.problems = {"idx_a": "no usable model", "idx_c": "1 unit failed (model_error: 1)"}

    with pytest.raises(CommandError) as failed:
        command.handle(now="2026-11-30T09:00:00+01:00", stores=None)

    line = "The kind could not do its work: idx_a: no usable model; idx_c: 1 unit failed (model_error: 1)."
    assert str(failed.value) == line
    assert json.loads(out.getvalue())["error"] == line


def test_from_the_command_line_a_failed_run_exits_1_with_one_line_on_stderr():
    out, err = StringIO(), StringIO()
    command = Kind(stdout=out, stderr=err)
    command.problems = {"idx_b": "no usable model"}

    with pytest.raises(SystemExit) as exited:
        command.run_from_argv(["manage.py", "kind", "--now", "2026-11-30T09:00:00+01:00"])

    assert exited.value.code == 1
    assert err.getvalue().splitlines() == ["CommandError: The kind could not do its work: idx_b: no usable model."]
    assert json.loads(out.getvalue())["stores"]
