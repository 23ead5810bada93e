from __future__ import annotations

import pytest

from tests.factories import work_command_summary
from tests.extraction.builders import extraction_answer, switch_put


@pytest.fixture
def fake_model(fake_model):
    """The fake chat model, answering an empty `core_extraction` when nothing is scripted."""
    fake_model.default = extraction_answer()
    return fake_model


@pytest.fixture
def run_extraction():
    """run_extraction(*arguments, now=None) -> the command's JSON summary (R-1.4)."""

    def _run(*arguments, now=None) -> dict:
        return work_command_summary("run_extraction", *arguments, now=now)

    return _run


@pytest.fixture
def switch(tenant, fake_model):
    """An enabled switch on the tenant's index, reading the fake model, set by the owner key."""
    response = switch_put(tenant.client(), tenant.index.id)
    assert response.status_code == 200, response.json()
    return response.json()
