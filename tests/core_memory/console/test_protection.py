"""The console's protections (issue 11): security headers on its pages, and a throttled login."""
import os
import uuid

import pytest
import redis
from django.test import Client

from core_memory.base.api import throttling
from core_memory.console.middleware import LOGIN_FAILURES_PER_ADDRESS, LOGIN_FAILURES_PER_NAME, LOGIN_LONGEST_DELAY_SECONDS
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


# --- behind a load balancer, and failures that are not hers (issue 28) ---------------------------

BALANCER = "10.0.0.5"


def through_the_balancer(client_address: str) -> Client:
    """A browser at `client_address`, whose requests reach Core through the load balancer."""
    return Client(REMOTE_ADDR=BALANCER, HTTP_X_FORWARDED_FOR=client_address)


@pytest.fixture
def balancer(settings):
    import ipaddress

    settings.CORE_TRUSTED_PROXIES = (ipaddress.ip_network(BALANCER),)


def test_behind_a_trusted_balancer_an_attackers_failures_hold_only_the_attacker(administrator, balancer, clock):
    """Issue 28: nothing mapped X-Forwarded-For, so every administrator shared the balancer's
    address: 31 failed random names held everyone there, 9 on a name held its owner. With the
    balancer trusted (CORE_TRUSTED_PROXIES), each is counted at her own address."""
    attacker = through_the_balancer("203.0.113.9")
    for number in range(31):
        log_in(attacker, "wrong", username=f"guess{number}")
    for _ in range(9):
        log_in(attacker, "wrong")

    rightful = through_the_balancer("198.51.100.4")

    assert log_in(attacker, CONSOLE_PASSWORD).status_code == 429
    assert log_in(rightful, CONSOLE_PASSWORD).status_code == 302


def test_an_untrusted_peer_cannot_choose_the_address_it_is_counted_at(administrator, balancer):
    """X-Forwarded-For from a connection that is no trusted proxy is not read: an attacker who
    writes another address in it on every try is still held."""
    failures = [
        log_in(Client(REMOTE_ADDR="203.0.113.9", HTTP_X_FORWARDED_FOR=f"192.0.2.{number}"), "wrong").status_code
        for number in range(LOGIN_FAILURES_PER_NAME + 1)
    ]

    assert failures == [200] * LOGIN_FAILURES_PER_NAME + [429]


def test_from_a_browser_she_logged_in_with_failures_that_are_not_hers_never_hold_her(administrator, clock):
    """Issue 28: an attacker at her own address (one office, one NAT) guessing her name, and any
    names, held her out. Her browser carries a signed device cookie from her last login; from it
    only its own failures count."""
    hers = Client(REMOTE_ADDR="198.51.100.4")
    assert log_in(hers, CONSOLE_PASSWORD).status_code == 302
    hers.post("/console/logout/")
    attacker = Client(REMOTE_ADDR="198.51.100.4")
    for number in range(LOGIN_FAILURES_PER_ADDRESS + 1):
        log_in(attacker, "wrong", username=f"guess{number}")
    for _ in range(9):
        log_in(attacker, "wrong")

    assert log_in(attacker, CONSOLE_PASSWORD).status_code == 429
    assert log_in(hers, CONSOLE_PASSWORD).status_code == 302
    assert hers.session["_auth_user_id"] == str(administrator.pk)


def test_a_device_cookie_is_hers_alone_and_its_own_failures_still_hold_it(administrator, clock):
    """The cookie names her: for another name it counts nothing, and a forged one is ignored. Five
    failures from her own browser hold it, as any other."""
    hers = Client(REMOTE_ADDR="198.51.100.4")
    log_in(hers, CONSOLE_PASSWORD)
    hers.post("/console/logout/")
    forged = Client(REMOTE_ADDR="198.51.100.4")
    forged.cookies["core_console_device"] = "eyJ1c2VyIjoiYW5uYSJ9:forged"
    for _ in range(LOGIN_FAILURES_PER_NAME):
        log_in(forged, "wrong")

    failures = [log_in(hers, "wrong").status_code for _ in range(LOGIN_FAILURES_PER_NAME)]

    assert log_in(forged, CONSOLE_PASSWORD).status_code == 429
    assert failures == [200] * LOGIN_FAILURES_PER_NAME
    assert log_in(hers, CONSOLE_PASSWORD).status_code == 429


def test_every_console_429_says_where_its_bucket_stands(administrator, console, settings, tenant):
    """Issue 28: the console's 429s carried `Retry-After` only; they carry `X-RateLimit-*` as the
    API's do — an administrator over her limit, a browser before login over its address's, a held login."""
    settings.CORE_RATE_LIMIT_PER_MINUTE = 0
    settings.CORE_RATE_LIMIT_ANONYMOUS_PER_MINUTE = 0
    browser = Client()
    held = Client(REMOTE_ADDR="203.0.113.9")

    answers = [console.get("/console/"), browser.get("/console/login/")]
    settings.CORE_RATE_LIMIT_ANONYMOUS_PER_MINUTE = 100
    for _ in range(LOGIN_FAILURES_PER_NAME):
        log_in(held, "wrong")
    answers.append(log_in(held, CONSOLE_PASSWORD))

    assert [answer.status_code for answer in answers] == [429, 429, 429]
    for answer in answers:
        assert int(answer["Retry-After"]) >= 1
        assert {"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} <= set(answer.headers)
        assert answer["X-RateLimit-Remaining"] == "0"
