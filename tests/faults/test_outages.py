"""PostgreSQL or the broker unreachable, with real processes (issue 11, R-12.3): the service
answers 503 with `Retry-After` and R-2.3's body, accepts no write it cannot keep, and
recovers by itself when the service is back — no restart.

Each test starts its own PostgreSQL or Redis (never the machine's shared ones) and the
service under gunicorn, then takes the database or broker away and brings it back."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import psycopg
import pytest

from tests.faults.processes import (
    ThrowawayPostgres,
    ThrowawayRedis,
    celery_worker,
    gunicorn,
    manage,
    organisation_create,
    service_environment,
    wait_until,
    workers_answering,
)

pytestmark = pytest.mark.faults


@pytest.fixture(scope="module")
def postgres():
    server = ThrowawayPostgres()
    try:
        server.start()
        yield server
    finally:
        server.remove()


def api(url: str, secret: str, method: str, path: str, **body) -> httpx.Response:
    return httpx.request(method, f"{url}/v1{path}", headers={"Authorization": f"Bearer {secret}"}, json=body or None, timeout=30)


def records_with_text(database_url: str, text: str) -> int:
    with psycopg.connect(_libpq(database_url)) as connection:
        return connection.execute("SELECT count(*) FROM memory_memoryrecord WHERE text = %s", [text]).fetchone()[0]


def _libpq(database_url: str) -> str:
    """The embedded server's URL names its socket folder percent-encoded as the host; libpq
    takes it as a `host` parameter."""
    from urllib.parse import unquote, urlparse

    parsed = urlparse(database_url)
    return f"dbname={parsed.path.lstrip('/')} user={parsed.username} host={unquote(parsed.hostname or parsed.netloc.split('@')[-1])}"


def test_the_database_going_away_is_a_503_with_retry_after_and_the_service_recovers_by_itself(postgres):
    environment = service_environment(database_url=postgres.url)
    manage(environment, "migrate", "--noinput")
    owner = organisation_create(environment)
    secret = owner["key"]
    with gunicorn(environment) as url:
        index = api(url, secret, "POST", "/indexes", name="storing").json()["id"]
        before = api(url, secret, "POST", "/memory", index_id=index, type="fact", text="Voor de storing")
        assert before.status_code == 201

        postgres.crash()
        during = {
            "read": api(url, secret, "GET", "/indexes"),
            "write": api(url, secret, "POST", "/memory", index_id=index, type="fact", text="Tijdens de storing"),
            "health": httpx.get(f"{url}/healthz", timeout=30),
        }
        postgres.start()
        after = wait_until(
            lambda: (response := api(url, secret, "POST", "/memory", index_id=index, type="fact", text="Na de storing")).status_code == 201
            and response,
            timeout=30,
            what="the service to write again",
        )

    for name, response in during.items():
        assert response.status_code == 503, (name, response.text)
        assert response.headers["Retry-After"] == "5", name
    assert during["write"].json()["error"] == {
        "type": "service_unavailable",
        "message": "The database is unreachable for a moment; nothing was written. Retry shortly.",
        "param": None,
    }
    assert after.json()["status"] == "created"
    assert records_with_text(postgres.url, "Voor de storing") == 1
    assert records_with_text(postgres.url, "Tijdens de storing") == 0
    assert records_with_text(postgres.url, "Na de storing") == 1


def test_the_broker_going_away_keeps_the_api_writing_and_the_worker_reconnects_by_itself(postgres):
    """The API needs no broker to answer or to keep a write (background work is durable in the
    database and dispatched by beat); /healthz says 503 with Retry-After while it is gone; the
    worker and the web process reconnect when it is back."""
    broker = ThrowawayRedis()
    broker.start()
    environment = service_environment(database_url=postgres.url, broker_url=broker.url, redis_url=broker.url)
    manage(environment, "migrate", "--noinput")
    secret = organisation_create(environment)["key"]
    try:
        with gunicorn(environment) as url, celery_worker(environment):
            wait_until(lambda: workers_answering(environment), timeout=60, what="the worker")
            index = api(url, secret, "POST", "/indexes", name="broker").json()["id"]

            broker.kill()
            health_during = httpx.get(f"{url}/healthz", timeout=30)
            write_during = api(url, secret, "POST", "/memory", index_id=index, type="fact", text="Zonder broker")
            read_during = api(url, secret, "GET", f"/memory?index_id={index}")
            broker.start()
            wait_until(lambda: httpx.get(f"{url}/healthz", timeout=30).status_code == 200, timeout=60, what="healthz")
            worker_back = wait_until(lambda: workers_answering(environment), timeout=90, what="the worker to reconnect")
    finally:
        broker.kill()

    assert (health_during.status_code, health_during.headers["Retry-After"]) == (503, "5")
    assert health_during.json()["checks"] == {"database": True, "broker": False}
    assert write_during.status_code == 201, write_during.text
    assert [record["text"] for record in read_during.json()["data"]] == ["Zonder broker"]
    assert records_with_text(postgres.url, "Zonder broker") == 1
    assert worker_back


def test_a_write_cut_off_by_the_crash_can_be_retried_with_its_idempotency_key(postgres):
    """R-2.6, R-12.3: a write whose request died with the database (its key claimed, its record
    never written) is retried with the same Idempotency-Key once the database is back: the retry
    runs and its record is there exactly once; a replay after that gives the same answer."""
    environment = service_environment(database_url=postgres.url)
    manage(environment, "migrate", "--noinput")
    secret = organisation_create(environment)["key"]
    body = {"type": "fact", "text": "Afgebroken door de storing"}
    with gunicorn(environment) as url:
        body["index_id"] = api(url, secret, "POST", "/indexes", name="afgebroken").json()["id"]
        blocker = psycopg.connect(_libpq(postgres.url), autocommit=False)
        blocker.execute("LOCK TABLE memory_memoryrecord IN ACCESS EXCLUSIVE MODE")
        with ThreadPoolExecutor(max_workers=1) as pool:
            cut_off = pool.submit(idempotent_write, url, secret, "schrijf-1", body)
            wait_until(lambda: waiting_on_the_lock(postgres.url), timeout=30, what="the write to wait on the record table")
            postgres.crash()
            during = cut_off.result(timeout=60)
        blocker.close()
        postgres.start()
        retried = wait_until(
            lambda: (response := idempotent_write(url, secret, "schrijf-1", body)).status_code != 503 and response, timeout=30, what="the database"
        )
        replayed = idempotent_write(url, secret, "schrijf-1", body)

    assert during.status_code == 503, during.text
    assert retried.status_code == 201, retried.text
    assert (replayed.status_code, replayed.headers.get("Idempotent-Replayed"), replayed.json()) == (201, "true", retried.json())
    assert records_with_text(postgres.url, body["text"]) == 1


def idempotent_write(url: str, secret: str, idempotency_key: str, body: dict) -> httpx.Response:
    return httpx.post(
        f"{url}/v1/memory", headers={"Authorization": f"Bearer {secret}", "Idempotency-Key": idempotency_key}, json=body, timeout=60
    )


def waiting_on_the_lock(database_url: str) -> bool:
    with psycopg.connect(_libpq(database_url)) as connection:
        return connection.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'").fetchone()[0] > 0
