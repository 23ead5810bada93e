from __future__ import annotations

import pytest

from tests.factories import work_command_summary
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
        return work_command_summary("run_maintenance", *arguments, now=now)

    return _run


@pytest.fixture
def run_store(tenant, run_maintenance):
    """Runs the tenant's store now, due or not; its summary."""

    def _run(now=None) -> dict:
        (summary,) = run_maintenance("--store", tenant.index.id, now=now)["stores"]
        return summary

    return _run
