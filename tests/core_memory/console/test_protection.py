"""The console's protections (issue 11): security headers on its pages, and a throttled login."""
import os
import uuid

import pytest
import redis
from django.test import Client

from core_memory.base.api import throttling
from core_memory.console.middleware import LOGIN_FAILURES_PER_NAME, LOGIN_LONGEST_DELAY_SECONDS
from tests.factories import CONSOLE_PASSWORD

REDIS_URL = os.environ.get("REDIS_URL", "")

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def counted_apart(settings):
    settings.CORE_RATE_LIMIT_URL = REDIS_URL
    settings.CORE_RATE_LIMIT_PREFIX = f"test-console-{uuid.uuid4().hex}"
    yield
    if REDIS_URL:
        client = redis.Redis.from_url(REDIS_URL)
        for name in client.scan_iter(f"{settings.CORE_RATE_LIMIT_PREFIX}:*"):
            client.delete(name)


@pytest.fixture
def clock(monkeypatch):
    """The limiter's clock, moved by hand: [seconds since the epoch]."""
    now = [1_900_800_000.0]  # the start of an hour: the failures' window does not end mid-test
    monkeypatch.setattr(throttling, "_now", lambda: now[0])
    return now


def log_in(client, password: str, username: str = "anna"):
    return client.post("/console/login/", {"username": username, "password": password, "next": "/console/"})


@pytest.mark.parametrize("path", ["/console/login/", "/console/", "/console/memory/memoryrecord/"])
def test_every_console_page_carries_the_security_headers(console, path):
    response = (Client() if path == "/console/login/" else console).get(path)

    assert response.status_code == 200
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"
    assert "no-store" in response["Cache-Control"]
    assert "script-src 'self'" in response["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in response["Content-Security-Policy"]


def test_after_five_failed_logins_the_login_is_refused_for_a_while_even_with_the_right_password(administrator):
    browser = Client()
    failures = [log_in(browser, "wrong").status_code for _ in range(LOGIN_FAILURES_PER_NAME)]

    refused = log_in(browser, CONSOLE_PASSWORD)

    assert failures == [200] * LOGIN_FAILURES_PER_NAME
    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 15 * 60
    assert "_auth_user_id" not in browser.session


def test_a_right_password_before_the_limit_logs_in(administrator):
    browser = Client()
    for _ in range(LOGIN_FAILURES_PER_NAME - 1):
        log_in(browser, "wrong")

    response = log_in(browser, CONSOLE_PASSWORD)

    assert response.status_code == 302
    assert browser.session["_auth_user_id"] == str(administrator.pk)


def test_another_name_from_the_same_address_is_not_refused_by_one_names_failures(administrator):
    browser = Client()
    for _ in range(LOGIN_FAILURES_PER_NAME):
        log_in(browser, "wrong", username="someone")

    assert log_in(browser, CONSOLE_PASSWORD).status_code == 302


def test_without_a_shared_store_the_counts_under_one_prefix_are_not_anothers(settings):
    """Issue 20: counted in the process (no Redis), one test's login failures leaked into the next."""
    from core_memory.base.api.throttling import attempts_count

    settings.CORE_RATE_LIMIT_URL = ""
    settings.CORE_RATE_LIMIT_PREFIX = f"test-console-{uuid.uuid4().hex}"
    for _ in range(3):
        attempts_count(name="login:anna", seconds=60, add=True)
    settings.CORE_RATE_LIMIT_PREFIX = f"test-console-{uuid.uuid4().hex}"

    assert attempts_count(name="login:anna", seconds=60, add=True)[0] == 1


def test_the_right_password_logs_in_again_once_a_short_delay_is_over(administrator, clock):
    """Issue 19: five wrong passwords for a name refused even the right one for 15 minutes, so
    knowing an administrator's name was enough to lock her out. The hold after them is a second."""
    browser = Client()
    for _ in range(LOGIN_FAILURES_PER_NAME):
        log_in(browser, "wrong")

    held = log_in(browser, CONSOLE_PASSWORD)
    clock[0] += 1.5
    again = log_in(browser, CONSOLE_PASSWORD)

    assert (held.status_code, held["Retry-After"]) == (429, "1")
    assert again.status_code == 302
    assert browser.session["_auth_user_id"] == str(administrator.pk)


def test_each_further_failure_doubles_the_delay_up_to_a_ceiling(administrator, clock):
    """Issue 19: an attacker is slowed more with every guess: 1, 2, 4 … seconds, at most the ceiling."""
    browser = Client()
    waits = []
    for _ in range(LOGIN_FAILURES_PER_NAME):
        log_in(browser, "wrong")
    for _ in range(10):
        waits.append(int(log_in(browser, "wrong")["Retry-After"]))
        clock[0] += waits[-1]
        assert log_in(browser, "wrong").status_code == 200  # the delay is over: this guess is checked (and fails)

    assert waits[:5] == [1, 2, 4, 8, 16]
    assert max(waits) == LOGIN_LONGEST_DELAY_SECONDS


def test_the_right_password_from_an_address_that_has_not_failed_logs_in_at_once(administrator, clock):
    """Issue 19: an attacker's failures from one address do not hold the administrator at another."""
    attacker = Client(REMOTE_ADDR="203.0.113.9")
    for _ in range(LOGIN_FAILURES_PER_NAME):
        log_in(attacker, "wrong")

    rightful = Client(REMOTE_ADDR="198.51.100.4")

    assert log_in(attacker, CONSOLE_PASSWORD).status_code == 429
    assert log_in(rightful, CONSOLE_PASSWORD).status_code == 302
