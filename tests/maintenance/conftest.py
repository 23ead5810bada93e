from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from tests.maintenance.builders import nothing_found


@pytest.fixture
def fake_model(fake_model, settings):
    """The fake chat model as the organisations' helper model (R-1.2), answering the empty answer
    of the shape asked when nothing is scripted."""
    settings.CORE_HELPER_MODEL = "fake-chat"
    fake_model.default = nothing_found
    return fake_model


@pytest.fixture
def run_maintenance():
    """run_maintenance(*arguments, now=None) -> the command's JSON summary (R-1.4)."""

    def _run(*arguments, now=None) -> dict:
        out = StringIO()
        moment = now or timezone.now()
        try:
            call_command("run_maintenance", *arguments, "--now", moment.isoformat(), stdout=out)
        except CommandError:
            if not out.getvalue():
                raise  # refused before it ran
            # It ran but could not do all its work: the summary says why, under "error".
        return json.loads(out.getvalue())

    return _run


@pytest.fixture
def run_store(tenant, run_maintenance):
    """Runs the tenant's store now, due or not; its summary."""

    def _run(now=None) -> dict:
        (summary,) = run_maintenance("--store", tenant.index.id, now=now)["stores"]
        return summary

    return _run
