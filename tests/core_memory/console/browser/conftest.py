"""Browser tests: the console in headless Chromium, driven by Playwright for Python (pytest-playwright)
against pytest-django's live server. Debian's chromium (.ci/run installs it); never `playwright install`.

A failing test leaves a screenshot under var/test-results/ (pyproject.toml's addopts). They run last
in a pytest session (tests/conftest.py): Playwright's sync API keeps an event loop running until the
session ends, which would break async tests collected after them."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from core_memory.console.services import console_administrator_create
from tests.core_memory.console.world import build_world
from tests.factories import CONSOLE_PASSWORD

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

ASYNC_UNSAFE = "DJANGO_ALLOW_ASYNC_UNSAFE"


@pytest.fixture(scope="session", autouse=True)
def orm_beside_playwright():
    """Playwright's sync API marks an event loop as running in the main thread, so Django's ORM (the
    tests' set-up, the live server's flush) would refuse to run there. Safe here: nothing else runs
    on that loop while the ORM does. Set from the first browser test (they run last) to the end of
    the session, never for the tests before them (a subprocess would inherit it), never in settings."""
    previous = os.environ.get(ASYNC_UNSAFE)
    os.environ[ASYNC_UNSAFE] = "true"
    yield
    if previous is None:
        os.environ.pop(ASYNC_UNSAFE, None)
    else:
        os.environ[ASYNC_UNSAFE] = previous


def pytest_collection_modifyitems(config, items):
    """Without Chromium a developer's `make test` skips them; CI (.ci/run installs it) never does."""
    if Path(CHROMIUM).exists() or os.environ.get("CI"):
        return
    skip = pytest.mark.skip(reason=f"no Chromium at {CHROMIUM} (apt-get install chromium; .ci/run does)")
    for item in items:
        if item.nodeid.startswith("tests/core_memory/console/browser/"):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_ARGS}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    """A Dutch browser: the console follows the browser's language (Accept-Language) until one is picked."""
    return {**browser_context_args, "locale": "nl-NL"}


@pytest.fixture
def world(transactional_db, tenant, fake_model, fast_password_hashing):
    """The console's world (tests/core_memory/console/world.py) and its administrator anna."""
    console_administrator_create(organisation=tenant.organisation, username="anna", password=CONSOLE_PASSWORD)
    return build_world(tenant, fake_model)


@pytest.fixture
def signed_in(world, live_server, page):
    """Chromium on the console's login page, signed in as anna (Dutch, the default)."""
    page.set_default_timeout(10_000)
    page.goto(f"{live_server.url}/console/")
    page.get_by_label("Gebruikersnaam").fill("anna")
    page.get_by_label("Wachtwoord").fill(CONSOLE_PASSWORD)
    page.get_by_role("button", name="Aanmelden").click()
    page.get_by_role("heading", name="Geheugen in één oogopslag").wait_for()
    return page
