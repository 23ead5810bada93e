"""A Celery worker of Core on a queue and a Redis key prefix of its own, for the fault tests
(tests/extraction/test_workers.py): `python -m tests.extraction.worker QUEUE PREFIX`.

The prefix keeps its messages — also the unacknowledged ones a killed worker leaves — apart
from every other run on the same Redis; a short visibility timeout makes Redis hand such a
message out again within seconds instead of an hour.
"""
import os
import sys

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "core_memory.settings")

from core_memory.celery import app  # noqa: E402

VISIBILITY_SECONDS = 2


def broker_options(prefix: str) -> dict:
    return {"global_keyprefix": prefix, "visibility_timeout": VISIBILITY_SECONDS}


if __name__ == "__main__":
    queue, prefix = sys.argv[1], sys.argv[2]
    app.conf.update(task_default_queue=queue, broker_transport_options=broker_options(prefix), task_ignore_result=True)
    app.worker_main(
        ["worker", "--queues", queue, "--concurrency", "1", "--loglevel", "WARNING", "--without-gossip", "--without-mingle", "--without-heartbeat"]
    )
