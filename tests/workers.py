"""Real Celery workers for the fault tests (R-12.4): a queue and a key prefix of their own on the
Redis at REDIS_URL, the test database shared, the fake model in the test's process. Workers run
`python -m tests.extraction.worker QUEUE PREFIX`; `kill` is a SIGKILL of the whole process group."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import redis
from celery import Celery

from tests.extraction.worker import broker_options
from tests.processes import PROJECT, database_url

REDIS_URL = os.environ.get("REDIS_URL", "")

needs_redis = pytest.mark.skipif(not REDIS_URL, reason="REDIS_URL is unset: no Redis broker to run real workers against")


class Broker:
    """A queue and a key prefix on the Redis at REDIS_URL, and the workers started on them."""

    def __init__(self, model_config: dict, tmp_path: Path, **environment: str):
        self.queue = f"test-workers-{uuid.uuid4().hex}"
        self.prefix = f"{self.queue}:"
        self.app = Celery("fault_test", set_as_current=False)
        self.app.conf.update(broker_url=REDIS_URL, broker_transport_options=broker_options(self.prefix), task_default_queue=self.queue)
        self.environment = {
            **os.environ,
            "DATABASE_URL": database_url(),
            "CELERY_BROKER_URL": REDIS_URL,
            "CORE_MODELS": json.dumps([model_config]),
            "CONN_MAX_AGE": "0",
            **environment,
        }
        self.logs = tmp_path
        self.workers: list[subprocess.Popen] = []

    def start_worker(self) -> subprocess.Popen:
        log = open(self.logs / f"worker-{len(self.workers)}.log", "w")  # noqa: SIM115 — closed with the process
        worker = subprocess.Popen(
            [sys.executable, "-m", "tests.extraction.worker", self.queue, self.prefix],
            cwd=PROJECT,
            env=self.environment,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: a kill reaches its pool processes too
        )
        self.workers.append(worker)
        return worker

    def kill(self, worker: subprocess.Popen) -> None:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(timeout=10)

    def send(self, task: str, *args) -> None:
        self.app.send_task(task, args=list(args), queue=self.queue)

    def close(self) -> None:
        for worker in self.workers:
            if worker.poll() is None:
                os.killpg(worker.pid, signal.SIGTERM)
                try:
                    worker.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(worker.pid, signal.SIGKILL)
                    worker.wait(timeout=10)
        self.app.close()
        client = redis.Redis.from_url(REDIS_URL)
        for key in client.scan_iter(match=f"{self.prefix}*"):
            client.delete(key)
        client.close()


def wait_for(condition, *, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")
