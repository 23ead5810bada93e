from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

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
        out = StringIO()
        moment = now or timezone.now()
        try:
            call_command("run_extraction", *arguments, "--now", moment.isoformat(), stdout=out)
        except CommandError:
            if not out.getvalue():
                raise  # refused before it ran
            # It ran but could not do all its work: the summary says why, under "error".
        return json.loads(out.getvalue())

    return _run


@pytest.fixture
def switch(tenant, fake_model):
    """An enabled switch on the tenant's index, reading the fake model, set by the owner key."""
    response = switch_put(tenant.client(), tenant.index.id)
    assert response.status_code == 200, response.json()
    return response.json()
