"""The whole service under gunicorn with `DATABASE_REPLICA_URLS` (core_memory.base.replicas): a
throwaway primary, a standby made from it with `pg_basebackup -R`, Redis, and two web processes,
so that read-your-writes crosses processes; the standby is stopped under load."""
from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import unquote, urlparse

import httpx
import pytest

from tests.faults.processes import (
    Standby,
    ThrowawayPostgres,
    ThrowawayRedis,
    gunicorn,
    manage,
    organisation_create,
    service_environment,
    wait_until,
)

pytestmark = pytest.mark.faults


@pytest.fixture(scope="module")
def service_with_replica():
    primary, redis_server = ThrowawayPostgres(), ThrowawayRedis()
    standby_server = None
    try:
        primary.start()
        redis_server.start()
        environment = service_environment(database_url=primary.url, redis_url=redis_server.url)
        manage(environment, "migrate", "--noinput")
        organisation = organisation_create(environment)
        standby_server = Standby(primary_socket_dir=unquote(urlparse(primary.url).netloc.split("@")[-1])).create()
        environment["DATABASE_REPLICA_URLS"] = standby_server.url("core_memory")
        environment["DATABASE_REPLICA_CHECK_SECONDS"] = "0.2"
        with gunicorn(environment, workers=2, threads=4) as url:
            yield url, organisation, standby_server
    finally:
        if standby_server is not None:
            standby_server.remove()
        redis_server.kill()
        primary.remove()


def _replica_record_reads(standby_server: Standby) -> int:
    return standby_server.sql(
        "SELECT coalesce(sum(seq_scan + coalesce(idx_scan, 0)), 0) FROM pg_stat_user_tables WHERE relname = 'memory_memoryrecord'",
        database="core_memory",
    )[0][0]


@pytest.mark.timeout(300)  # a primary, its standby and two web processes start first
def test_the_service_reads_on_its_replica_and_keeps_every_write_when_the_replica_stops(service_with_replica):
    """Through gunicorn (two processes): each person writes a record and searches for it at once,
    from several clients, while the standby is stopped half-way: every write is answered and found
    by its writer's next search, nothing fails, and the replica answered reads before it stopped."""
    url, organisation, standby_server = service_with_replica
    headers = {"Authorization": f"Bearer {organisation['key']}"}
    index = httpx.post(f"{url}/v1/indexes", json={"name": "klanten"}, headers=headers, timeout=30).json()
    reads_before = _replica_record_reads(standby_server)
    failures: list[str] = []
    done = []

    def person_works(person: str) -> None:
        with httpx.Client(base_url=f"{url}/v1", headers={**headers, "X-Core-Subject": person}, timeout=30) as client:
            for number in range(8):
                word = f"w{uuid.uuid4().hex[:10]}"
                write = client.post("/memory", json={"index_id": index["id"], "type": "fact", "text": f"{person} noemt {word}."})
                search = client.post("/memory/search", json={"index_id": index["id"], "query": word})
                page = client.get("/memory", params={"index_id": index["id"], "limit": 500})
                if write.status_code != 201 or search.status_code != 200 or page.status_code != 200:
                    failures.append(f"{person}: {write.status_code} {search.status_code} {page.status_code}")
                    continue
                if [hit["id"] for hit in search.json()["data"]] != [write.json()["memory_id"]]:
                    failures.append(f"{person}: search after write missed {word}")
                if write.json()["memory_id"] not in {record["id"] for record in page.json()["data"]}:
                    failures.append(f"{person}: list after write missed {word}")
                done.append(write.json()["memory_id"])

    with ThreadPoolExecutor(6) as pool:
        running = [pool.submit(person_works, f"person-{number}") for number in range(6)]
        wait_until(lambda: len(done) >= 16 or all(future.done() for future in running), timeout=120, what="the first writes")
        wait_until(lambda: _replica_record_reads(standby_server) > reads_before, timeout=30, what="reads on the replica")
        standby_server.crash()
        for future in running:
            future.result()
    assert failures == []
    assert len(done) == 48
    listed = httpx.get(f"{url}/v1/memory", params={"index_id": index["id"], "limit": 500}, headers=headers, timeout=30).json()["data"]
    assert set(done) <= {record["id"] for record in listed}
