"""Reads on a real PostgreSQL streaming replica (core_memory.base.replicas): a standby made with
`pg_basebackup -R` from the primary, replaying its WAL.

In process, the standby is made from the test database's own server: what a replica read
shows is told apart from the primary's by pausing the standby's replay and writing. The whole
service under gunicorn (two workers, so read-your-writes crosses processes through Redis)
with `DATABASE_REPLICA_URLS`, its standby stopped under load: test_replicas_service.py."""
from __future__ import annotations

import copy
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.conf import settings as django_settings
from django.db import connections

from core_memory.base import replicas
from tests.factories import client_for, make_key
from tests.faults.processes import Standby, wait_until

ALIAS = "replica_1"
pytestmark = [pytest.mark.faults, pytest.mark.django_db(transaction=True, databases=["default", ALIAS])]


@pytest.fixture(scope="module", autouse=True)
def standby(django_db_setup, django_db_blocker):
    """A standby of the server holding the test database, known to Django as `replica_1` (a
    mirror of the test database, so the test runner neither creates nor empties it)."""
    host = django_settings.DATABASES["default"]["HOST"]
    if not str(host).startswith("/"):
        pytest.skip("the standby is made from the embedded PostgreSQL, reached on its Unix socket")
    server = Standby(primary_socket_dir=host).create()
    configuration = copy.deepcopy(connections["default"].settings_dict)
    configuration.update(HOST=str(server.sockets), CONN_MAX_AGE=0)
    configuration["OPTIONS"] = {**configuration["OPTIONS"], "connect_timeout": 1}
    configuration["TEST"] = {**configuration["TEST"], "MIRROR": "default"}
    connections.settings[ALIAS] = configuration
    try:
        yield server
    finally:
        connections[ALIAS].close()
        del connections.settings[ALIAS]
        server.remove()


@pytest.fixture(autouse=True)
def replicas_on(settings, standby):
    """The service as `DATABASE_REPLICA_URLS` configures it; every read checks the replica
    again (a test moves the replica's state, not a clock)."""
    if not settings.REDIS_URL:
        pytest.skip("read-your-writes remembers positions in Redis")
    settings.CORE_REPLICA_DATABASES = [ALIAS]
    settings.DATABASE_ROUTERS = ["core_memory.base.replicas.ReplicaRouter"]
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, "core_memory.base.replicas.ReplicaWritesMiddleware"]
    settings.CORE_REPLICA_POSITIONS_URL = settings.REDIS_URL
    settings.CORE_REPLICA_CHECK_SECONDS = 0
    settings.CORE_REPLICA_MAX_LAG_SECONDS = 3600
    replicas._health.forget()
    yield
    standby.sql("SELECT pg_wal_replay_resume()")
    replicas._health.forget()


def caught_up(standby: Standby) -> None:
    """Wait until the standby has replayed everything the primary has written."""
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT pg_current_wal_insert_lsn()::text")
        target = cursor.fetchone()[0]
    wait_until(
        lambda: standby.sql(f"SELECT pg_last_wal_replay_lsn() >= '{target}'::pg_lsn")[0][0], timeout=30, what="the standby to replay"
    )


def found(client, tenant, query: str) -> list[str]:
    answer = client.post("/v1/memory/search", {"index_id": tenant.index.id, "query": query}, format="json")
    assert answer.status_code == 200, answer.content
    return [hit["text"] for hit in answer.json()["data"]]


def listed(client, tenant) -> list[str]:
    answer = client.get("/v1/memory", {"index_id": tenant.index.id, "limit": 500})
    assert answer.status_code == 200, answer.content
    return [record["text"] for record in answer.json()["data"]]


def written(client, tenant, text: str) -> None:
    answer = client.post("/v1/memory", {"index_id": tenant.index.id, "type": "fact", "text": text}, format="json")
    assert answer.status_code == 201, answer.content


def test_reads_go_to_the_replica_and_a_person_reads_her_own_write_at_once(tenant, standby):
    """Searches and lists of a reader whose writes the replica has replayed read there (a write
    the replica has not replayed yet is missing from them); the writer, by person or by key,
    reads her write at once."""
    _other_key, other_secret = make_key(tenant.organisation, name="other backend")
    written(tenant.client(), tenant, "Het kantoor sluit om vijf uur.")
    caught_up(standby)
    standby.sql("SELECT pg_wal_replay_pause()")

    # A shared record by the owner key (no person: remembered for the key).
    written(tenant.client(), tenant, "De parkeergarage gaat om zeven uur open.")
    # Anna's own record, written through the other key.
    written(client_for(other_secret, subject="anna"), tenant, "Anna drinkt geen koffie.")

    bob_elsewhere = client_for(other_secret, subject="bob")
    assert found(bob_elsewhere, tenant, "parkeergarage open") == []
    assert "De parkeergarage gaat om zeven uur open." not in listed(bob_elsewhere, tenant)
    assert found(bob_elsewhere, tenant, "kantoor sluit") == ["Het kantoor sluit om vijf uur."]
    # The key that wrote it, for any person; Anna, through either key.
    assert found(tenant.client(subject="bob"), tenant, "parkeergarage open") == ["De parkeergarage gaat om zeven uur open."]
    assert found(client_for(other_secret, subject="anna"), tenant, "koffie") == ["Anna drinkt geen koffie."]
    assert found(tenant.client(subject="anna"), tenant, "koffie") == ["Anna drinkt geen koffie."]
    assert "Anna drinkt geen koffie." in listed(tenant.client(subject="anna"), tenant)

    standby.sql("SELECT pg_wal_replay_resume()")
    caught_up(standby)
    assert found(bob_elsewhere, tenant, "parkeergarage open") == ["De parkeergarage gaat om zeven uur open."]


def test_a_replica_further_behind_than_the_bound_is_skipped(tenant, standby, settings):
    """`DATABASE_REPLICA_MAX_LAG_SECONDS`: a replica that has not replayed what the primary
    wrote, for longer than the bound, answers no read until it catches up."""
    _other_key, other_secret = make_key(tenant.organisation, name="other backend")
    caught_up(standby)
    standby.sql("SELECT pg_wal_replay_pause()")
    written(tenant.client(), tenant, "De parkeergarage gaat om zeven uur open.")
    bob_elsewhere = client_for(other_secret, subject="bob")
    assert found(bob_elsewhere, tenant, "parkeergarage open") == []

    settings.CORE_REPLICA_MAX_LAG_SECONDS = 0
    assert found(bob_elsewhere, tenant, "parkeergarage open") == ["De parkeergarage gaat om zeven uur open."]
    (state,) = replicas.replica_states().values()
    assert state.usable is False and state.lag_seconds > 0


def test_a_replica_that_went_down_is_skipped_and_used_again_once_back(tenant, standby, settings, monkeypatch):
    """A replica stopped after its last check costs no error: the read that finds it gone runs
    again on the primary, the replica is left alone until its next check, and used again once
    a check finds it back."""
    settings.CORE_REPLICA_CHECK_SECONDS = 60
    _other_key, other_secret = make_key(tenant.organisation, name="other backend")
    written(tenant.client(), tenant, "Het kantoor sluit om vijf uur.")
    caught_up(standby)
    bob_elsewhere = client_for(other_secret, subject="bob")
    assert found(bob_elsewhere, tenant, "kantoor sluit") == ["Het kantoor sluit om vijf uur."]
    assert [state.usable for state in replicas.replica_states().values()] == [True]

    standby.crash()
    try:
        assert found(bob_elsewhere, tenant, "kantoor sluit") == ["Het kantoor sluit om vijf uur."]
        assert [state.usable for state in replicas.replica_states().values()] == [False]
        assert "Het kantoor sluit om vijf uur." in listed(bob_elsewhere, tenant)
    finally:
        standby.start()
    caught_up(standby)
    later = replicas.clock() + 61
    monkeypatch.setattr(replicas, "clock", lambda: later)
    standby.sql("SELECT pg_wal_replay_pause()")
    written(tenant.client(), tenant, "De parkeergarage gaat om zeven uur open.")
    assert found(bob_elsewhere, tenant, "parkeergarage open") == []


def test_a_replica_stopped_under_load_costs_no_error(tenant, standby, settings):
    """Searches and lists from several threads while the standby is stopped under them: every
    answer is a 200 with what the store holds."""
    # Checked once before: the reads in flight and the next ones find it gone themselves.
    settings.CORE_REPLICA_CHECK_SECONDS = 60
    _other_key, other_secret = make_key(tenant.organisation, name="other backend")
    written(tenant.client(), tenant, "Het kantoor sluit om vijf uur.")
    caught_up(standby)
    answered: list[tuple[str, bool]] = []
    started = threading.Barrier(5)

    def reads(person: str) -> None:
        client = client_for(other_secret, subject=person)
        started.wait()
        try:
            for number in range(30):
                if number % 2:
                    texts = found(client, tenant, "kantoor sluit")
                else:
                    texts = listed(client, tenant)
                answered.append((person, texts == ["Het kantoor sluit om vijf uur."]))
        finally:
            connections.close_all()

    with ThreadPoolExecutor(4) as pool:
        running = [pool.submit(reads, f"person-{number}") for number in range(4)]
        started.wait()
        wait_until(lambda: len(answered) >= 20, timeout=60, what="the first reads")
        standby.crash()
        for future in running:
            future.result()
    standby.start()
    assert len(answered) == 120
    assert [state.usable for state in replicas.replica_states().values()] == [False]
    assert all(right for _person, right in answered)
