"""Faults with real processes (R-12.4): Celery workers on the Redis broker, the fake model in this
process, the test database shared. A worker killed with SIGKILL while the helper model answers a
store lesson's job loses nothing and writes nothing twice."""
import time

import pytest

from maintenance.models import EpisodeUse, MaintenanceJob
from maintenance.services.planning import maintenance_store_plan
from memory.models import MemoryRecord
from tests.maintenance.builders import STORE_LESSON, episode, lesson, sections
from tests.workers import Broker, needs_redis, wait_for

# A job's claim, and its task's time limit, in the workers: short, so a dead worker's job is
# handed out again within seconds.
JOB_SECONDS = 3

pytestmark = [pytest.mark.django_db(transaction=True), needs_redis]


@pytest.fixture
def broker(fake_model, tmp_path):
    broker = Broker(
        fake_model.config("fake-chat"), tmp_path, CORE_HELPER_MODEL="fake-chat", CORE_MAINTENANCE_JOB_SECONDS=str(JOB_SECONDS)
    )
    yield broker
    broker.close()


def test_a_worker_killed_mid_job_loses_nothing_and_writes_nothing_twice(tenant, fake_model, broker):
    """R-12.4: SIGKILL while the model is answering; another worker runs the job again once the
    claim ran out; one lesson, each episode used once."""
    sections(tenant.index, lessons={"enabled": True, "min_episodes": 3})
    episodes = [episode(tenant.index, f"Sessie {number} ging goed.") for number in range(3)]
    (job_id,) = maintenance_store_plan(index_id=tenant.index.id, force=True).job_ids
    held = fake_model.hold(lesson("Werk in kleine stappen."), format_name=STORE_LESSON)
    fake_model.answer(lesson("Werk in kleine stappen."), format_name=STORE_LESSON, times=None)

    first = broker.start_worker()
    broker.send("maintenance.tasks.maintenance_job_task", job_id)
    wait_for(lambda: fake_model.requests, timeout=60, what="the first worker to ask the model")
    broker.kill(first)
    held.set()
    killed = MaintenanceJob.objects.get()
    assert (killed.status, killed.attempts, MemoryRecord.objects.filter(type="lesson").count()) == ("running", 1, 0)

    broker.start_worker()
    time.sleep(JOB_SECONDS)  # the dead worker's claim runs out
    broker.send("maintenance.tasks.maintenance_dispatch_task")
    wait_for(lambda: MaintenanceJob.objects.filter(status="done").exists(), timeout=60, what="the job to be run again")
    broker.send("maintenance.tasks.maintenance_job_task", job_id)  # one more delivery: nothing to do
    time.sleep(1)

    job = MaintenanceJob.objects.get()
    (written,) = MemoryRecord.objects.filter(type="lesson")
    assert (job.status, job.attempts, job.written, job.model_calls) == ("done", 2, 1, 1)
    assert (written.subject, written.text, written.trusted) == ("anna", "Werk in kleine stappen.", False)
    assert sorted(EpisodeUse.objects.values_list("episode_id", "lesson_id")) == sorted((each.id, written.id) for each in episodes)
    assert len(fake_model.requests) == 2
