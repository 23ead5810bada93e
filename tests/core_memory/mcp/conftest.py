"""A real gunicorn serving core_memory.wsgi (so `/mcp` through a2wsgi) on the test database,
and a helper that runs the SDK's async client in a thread of its own (no event loop of
another test — Playwright's, pytest's — can be in its way)."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import anyio
import pytest

from tests.processes import child_environment, gunicorn_start, stop, wait_until_answering


@pytest.fixture(scope="module")
def site(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        environment = child_environment()
    process, base = gunicorn_start(environment=environment, workers=2)
    try:
        wait_until_answering(process, base)
        yield base
    finally:
        stop(process)


def run_async(function, *args):
    """Runs `function(*args)` (a coroutine function) to completion on a loop in a fresh thread."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(anyio.run, function, *args).result(timeout=120)
