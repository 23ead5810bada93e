"""Scale-out, shown (issue 14, README "Production"): two web processes and two Celery workers
against one database and one broker, as N gunicorn instances and M workers on several machines
run. Writes, turns and background work stay correct whichever process handles them."""
from __future__ import annotations

import json
import os
import re
import subprocess
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import httpx
import pytest
from celery import Celery
from django.utils import timezone

from core_memory.keys.models import ApiKey, KeyTrailEntry
from memory.models import MemoryRecord
from tests.factories import make_key
from tests.fake_model import FakeChatModel
from tests.processes import BIN, PROJECT, child_environment, gunicorn_start, stop, wait_until_answering

REDIS_URL = os.environ.get("REDIS_URL", "")
TASK = "core_memory.keys.tasks.keys_expiry_record_task"
SUCCEEDED = re.compile(r"Task core_memory\.keys\.tasks\.keys_expiry_record_task\[[^\]]+\] succeeded in [^:]+: (\{.*\})")

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not REDIS_URL, reason="REDIS_URL is unset: the workers need a real broker"),
]


@pytest.fixture(scope="module")
def deployment(django_db_setup, django_db_blocker, tmp_path_factory):
    """Two gunicorn instances (one worker each) and two Celery workers on a queue of their own."""
    logs = tmp_path_factory.mktemp("scale-out")
    queue = f"scale-out-{uuid.uuid4().hex}"
    with FakeChatModel() as model, django_db_blocker.unblock():
        environment = child_environment(
            CELERY_BROKER_URL=REDIS_URL, CORE_MODELS=json.dumps([model.config("fake-chat")])
        )
        webs = [gunicorn_start(environment=environment) for _ in range(2)]
        workers = []
        for name in ("a", "b"):
            log = logs / f"worker-{name}.log"
            process = subprocess.Popen(
                [str(BIN / "celery"), "-A", "core_memory", "worker", "-Q", queue, "-n", f"{queue}-{name}@%h",
                 "--concurrency", "1", "--loglevel", "INFO", "--without-gossip", "--without-mingle"],
                cwd=PROJECT, env=environment, stdout=log.open("w"), stderr=subprocess.STDOUT,
            )
            workers.append((process, log))
        try:
            for process, base in webs:
                wait_until_answering(process, base)
            deadline = time.monotonic() + 60
            while not all(" ready." in log.read_text() for _, log in workers):
                assert time.monotonic() < deadline, [log.read_text() for _, log in workers]
                assert all(process.poll() is None for process, _ in workers), [log.read_text() for _, log in workers]
                time.sleep(0.2)
            broker = Celery("scale-out-test", set_as_current=False)
            broker.conf.update(broker_url=REDIS_URL, task_default_queue=queue)
            yield {"webs": [base for _, base in webs], "workers": workers, "broker": broker, "model": model}
        finally:
            for process, _ in webs:
                stop(process)
            for process, _ in workers:
                stop(process)


def _post(base: str, secret: str, path: str, body: dict, subject: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {secret}"} | ({"X-Core-Subject": subject} if subject else {})
    return httpx.post(f"{base}{path}", json=body, headers=headers, timeout=60)


def test_concurrent_writes_through_both_web_processes_stay_exact(deployment, tenant):
    """R-5.4 across processes: 16 writes of one text make one record confirmed 15 times; 16
    different texts make 16 records. No write is lost or doubled."""
    webs = deployment["webs"]
    same = {"index_id": tenant.index.id, "type": "preference", "text": "Wil facturen per e-mail."}
    calls = [(webs[number % 2], same) for number in range(16)]
    calls += [(webs[number % 2], {"index_id": tenant.index.id, "type": "fact", "text": f"Feit {number}."}) for number in range(16)]

    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(lambda call: _post(call[0], tenant.secret, "/v1/memory", call[1], subject="anna"), calls))

    assert sorted(answer.status_code for answer in answers[:16]) == [200] * 15 + [201]
    assert {answer.json()["memory_id"] for answer in answers[:16]} == {answers[0].json()["memory_id"]}
    assert [answer.status_code for answer in answers[16:]] == [201] * 16
    preference = MemoryRecord.objects.get(type="preference")
    assert (preference.confirmations, preference.history.count()) == (15, 16)
    assert MemoryRecord.objects.filter(type="fact").count() == 16


def test_a_conversation_moves_between_web_processes_and_sees_memory_written_on_the_other(deployment, tenant):
    """R-7.1, R-7.5: a turn on one process continues the thread of a turn on the other, and the
    injection block holds a record written through the other process a moment before."""
    key, secret = make_key(tenant.organisation, memory={"injection": {"enabled": True, "index_id": tenant.index.id}})
    first_web, second_web = deployment["webs"]
    model = deployment["model"]
    model.requests.clear()

    assert _post(first_web, secret, "/v1/memory", {"index_id": tenant.index.id, "type": "fact", "text": "Fietst naar kantoor."}, subject="anna").status_code == 201
    first = _post(second_web, secret, "/v1/responses", {"model": "fake-chat", "user": "anna", "input": "Hoe kom ik op kantoor?"})
    second = _post(first_web, secret, "/v1/responses", {"model": "fake-chat", "user": "anna", "input": "En terug?", "thread_id": first.json()["thread_id"]})

    assert (first.status_code, first.json()["status"], second.json()["status"]) == (200, "completed", "completed")
    assert second.json()["thread_id"] == first.json()["thread_id"]
    items = httpx.get(f"{second_web}/v1/threads/{first.json()['thread_id']}/items", headers={"Authorization": f"Bearer {secret}"}).json()["data"]
    assert [(item["role"], item["content"]) for item in items] == [
        ("user", "Hoe kom ik op kantoor?"), ("assistant", "ok"), ("user", "En terug?"), ("assistant", "ok")
    ]
    first_request, second_request = (request.body for request in model.requests)
    assert "Fietst naar kantoor." in first_request["messages"][0]["content"]
    assert [message["content"] for message in second_request["messages"] if message["role"] != "system"] == [
        "Hoe kom ik op kantoor?", "ok", "En terug?"
    ]


def test_background_work_spread_over_two_workers_is_done_once(deployment, tenant):
    """R-12.4's ground: 30 runs of a scheduled task taken by two workers at once record each of
    five expired keys exactly once (a unique constraint decides, not luck)."""
    expired = [make_key(tenant.organisation, name=f"oud {number}")[0] for number in range(5)]
    ApiKey.objects.filter(pk__in=[key.pk for key in expired]).update(expires_at=timezone.now() - timedelta(hours=1))
    workers = deployment["workers"]
    done_before = [len(SUCCEEDED.findall(log.read_text())) for _, log in workers]

    for _ in range(30):
        deployment["broker"].send_task(TASK)
    deadline = time.monotonic() + 90
    while sum(len(SUCCEEDED.findall(log.read_text())) for _, log in workers) - sum(done_before) < 30:
        assert time.monotonic() < deadline, [log.read_text()[-2000:] for _, log in workers]
        time.sleep(0.2)

    results = [[json.loads(found.replace("'", '"')) for found in SUCCEEDED.findall(log.read_text())[before:]]
               for (_, log), before in zip(workers, done_before, strict=True)]
    assert all(results), f"each worker took a share: {[len(share) for share in results]}"
    assert sum(result["expired"] for share in results for result in share) == 5
    assert sorted(KeyTrailEntry.objects.filter(event="expired").values_list("key_id", flat=True)) == sorted(key.id for key in expired)
