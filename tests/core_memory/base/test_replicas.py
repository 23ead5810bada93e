"""Read replicas' configuration and bookkeeping (core_memory.base.replicas), without a standby:
tests/faults/test_replicas.py reads on a real one."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import redis
from django.db import connection, transaction

from core_memory.base import replicas
from core_memory.base.replicas import Reader
from core_memory.organisations.models import Organisation

PROJECT = Path(__file__).resolve().parents[3]
PRINT_DATABASES = (
    "import json; from django.conf import settings as s; "
    "print(json.dumps({'replicas': s.CORE_REPLICA_DATABASES, 'routers': s.DATABASE_ROUTERS, 'middleware': s.MIDDLEWARE, "
    "'databases': {alias: {'host': d['HOST'], 'name': d['NAME'], 'mirror': d.get('TEST', {}).get('MIRROR')} for alias, d in s.DATABASES.items()}}))"
)


def start(**variables: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "core_memory.settings", **variables}
    return subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {PRINT_DATABASES}"],
        cwd=PROJECT, env=environment, capture_output=True, text=True, timeout=60,
    )


def test_replica_urls_become_read_databases_behind_the_router():
    """`DATABASE_REPLICA_URLS` names each replica (a Unix socket folder too); reads are routed and
    writes remembered only when one is configured, and tests take a replica for the primary."""
    started = start(
        DATABASE_URL="postgres://core@db.internal/core",
        REDIS_URL="redis://127.0.0.1:1/0",
        DATABASE_REPLICA_URLS="postgres://core@replica-a.internal/core, postgres://core@%2Fvar%2Frun%2Fpg/core",
    )
    assert started.returncode == 0, started.stderr
    configured = json.loads(started.stdout)
    assert configured["replicas"] == ["replica_1", "replica_2"]
    assert configured["databases"]["replica_1"] == {"host": "replica-a.internal", "name": "core", "mirror": "default"}
    assert configured["databases"]["replica_2"]["host"] == "/var/run/pg"
    assert configured["routers"] == ["core_memory.base.replicas.ReplicaRouter"]
    middleware = configured["middleware"]
    assert middleware.index("core_memory.base.replicas.ReplicaWritesMiddleware") == middleware.index("core_memory.api.middleware.ServiceUnavailableMiddleware") + 1

    plain = json.loads(start(DATABASE_URL="postgres://core@db.internal/core", REDIS_URL="redis://127.0.0.1:1/0").stdout)
    assert (plain["replicas"], plain["routers"], list(plain["databases"])) == ([], [], ["default"])
    assert "core_memory.base.replicas.ReplicaWritesMiddleware" not in plain["middleware"]


def test_replicas_without_redis_stop_start_up():
    """Without a store every process shares, read-your-writes could not hold across processes."""
    started = start(
        DATABASE_URL="postgres://core@db.internal/core",
        REDIS_URL="",
        CELERY_BROKER_URL="filesystem://",
        DATABASE_REPLICA_URLS="postgres://core@replica-a.internal/core",
    )
    assert started.returncode == 1
    assert "DATABASE_REPLICA_URLS needs REDIS_URL" in started.stderr


@pytest.mark.django_db
def test_the_router_sends_writes_and_a_writes_reads_to_the_primary():
    router = replicas.ReplicaRouter()
    token = replicas._reading_on.set("replica_1")
    try:
        assert router.db_for_write(None) == "default"
        with transaction.atomic():
            assert router.db_for_read(None) == "default"
    finally:
        replicas._reading_on.reset(token)
    assert router.db_for_read(None) == "default"


@pytest.mark.parametrize(
    ("statement", "writes"),
    [
        ('INSERT INTO "memory_memoryrecord" ("id") VALUES (%s)', True),
        ('  update "memory_memoryrecord" SET "retrieval_count" = 1', True),
        ('DELETE FROM "memory_memoryrecord" WHERE "id" = %s', True),
        ("WITH gone AS (DELETE FROM t RETURNING id) SELECT count(*) FROM gone", True),
        ('SELECT "id" FROM "memory_memoryrecord" WHERE "text" = \'UPDATE\'', False),
        ("WITH ranked AS (SELECT id FROM t) SELECT id FROM ranked", False),
    ],
)
def test_a_statement_that_writes_is_told_from_a_read(statement, writes):
    assert bool(replicas._WRITE.match(statement)) is writes


@pytest.fixture
def positions(settings):
    if not settings.REDIS_URL:
        pytest.skip("positions are remembered in Redis")
    settings.CORE_REPLICA_POSITIONS_URL = settings.REDIS_URL
    settings.CORE_REPLICA_POSITION_PREFIX = f"core:written:test:{os.getpid()}"
    client = redis.Redis.from_url(settings.REDIS_URL)
    yield client
    for key in client.scan_iter(f"{settings.CORE_REPLICA_POSITION_PREFIX}:*"):
        client.delete(key)


@pytest.mark.django_db
def test_a_write_is_remembered_for_her_person_and_a_shared_write_for_its_key(positions):
    """A person's reads wait for her writes (whichever key wrote them) and for her key's writes
    for nobody; not for what the same key wrote for another person."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint")
        before = cursor.fetchone()[0]
    replicas.position_remember(Reader(organisation_id="org_a", person="anna", key_id="key_1"))
    assert replicas._position_needed(Reader(organisation_id="org_a", person="anna", key_id="key_2")) >= before
    assert replicas._position_needed(Reader(organisation_id="org_a", person="bob", key_id="key_1")) == 0
    assert replicas._position_needed(Reader(organisation_id="org_b", person="anna", key_id="key_1")) == 0

    replicas.position_remember(Reader(organisation_id="org_a", person=None, key_id="key_1"))
    assert replicas._position_needed(Reader(organisation_id="org_a", person="bob", key_id="key_1")) >= before


@pytest.mark.django_db
def test_a_remembered_position_never_goes_back(positions, settings):
    """Two requests of one person commit in one order and remember in the other: the later
    position stays."""
    key = Reader(organisation_id="org_a", person="anna").written_under()
    positions.eval(replicas._RAISE_SCRIPT, 1, *key, replicas._position_text(0x2_0000_0000), 60)
    positions.eval(replicas._RAISE_SCRIPT, 1, *key, replicas._position_text(0x1_FFFF_FFFF), 60)
    assert replicas._position_needed(Reader(organisation_id="org_a", person="anna")) == 0x2_0000_0000


@pytest.mark.django_db(transaction=True, databases=["default"])
def test_with_positions_unknown_a_read_runs_on_the_primary(settings):
    """Redis unreachable: whether a replica has seen the reader's writes cannot be known."""
    settings.CORE_REPLICA_DATABASES = ["replica_1"]
    settings.CORE_REPLICA_POSITIONS_URL = "redis://127.0.0.1:1/0"
    assert replicas._replica_for(Reader(organisation_id="org_a", person="anna")) is None
    # Routed to the replica, the read would meet a database Django does not know.
    assert replicas.replica_read(Reader(organisation_id="org_a", key_id="key_1"), lambda: list(Organisation.objects.all())) == []
