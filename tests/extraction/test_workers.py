"""Faults with real processes (R-12.4): Celery workers on the Redis broker, the fake model in
this process, the test database shared. A worker killed with SIGKILL in the middle of a
window loses nothing and writes nothing twice; two workers racing over the same windows
read each once."""
import json
import time
from collections import Counter

import pytest

from extraction.models import ExtractionWindow
from extraction.services.planning import extraction_switch_plan
from memory.models import MemoryRecord
from tests.extraction.builders import add, conversation, extraction_answer, switch_put
from tests.workers import Broker, needs_redis, wait_for
# A window's claim, and its task's time limit, in the workers: short, so a dead worker's
# window is handed out again within seconds.
WINDOW_SECONDS = 3

pytestmark = [pytest.mark.django_db(transaction=True), needs_redis]


@pytest.fixture
def broker(fake_model, tmp_path):
    broker = Broker(fake_model.config("fake-chat"), tmp_path, CORE_EXTRACTION_WINDOW_SECONDS=str(WINDOW_SECONDS))
    yield broker
    broker.close()


def window_request_counts(model) -> Counter:
    """How often the model was asked about each window, known by its first item."""
    return Counter(json.loads(request.body["messages"][-1]["content"])["items"][0]["id"] for request in model.requests)


def test_a_worker_killed_mid_window_loses_nothing_and_writes_nothing_twice(tenant, fake_model, broker):
    """R-12.4: SIGKILL while the model is answering; another worker reads the window again
    once the claim ran out, and each record exists once."""
    switch_put(tenant.client(), tenant.index.id)
    _, items = conversation(organisation=tenant.organisation, key=tenant.key, messages=["Ik heet Anna en woon in Delft."])
    (window_id,) = extraction_switch_plan(index_id=tenant.index.id).window_ids
    answer = extraction_answer([add("Heet Anna.", item_ids=[items[0].id]), add("Woont in Delft.", item_ids=[items[0].id])])
    held = fake_model.hold(answer)
    fake_model.answer(answer, times=None)

    first = broker.start_worker()
    broker.send("extraction.tasks.extraction_window_task", window_id)
    wait_for(lambda: fake_model.requests, timeout=60, what="the first worker to ask the model")
    broker.kill(first)
    held.set()
    killed = ExtractionWindow.objects.get()
    assert (killed.status, killed.attempts, MemoryRecord.objects.count()) == ("running", 1, 0)

    broker.start_worker()
    time.sleep(WINDOW_SECONDS)  # the dead worker's claim runs out
    broker.send("extraction.tasks.extraction_dispatch_task")
    wait_for(lambda: ExtractionWindow.objects.filter(status="ready").exists(), timeout=60, what="the window to be read")
    broker.send("extraction.tasks.extraction_window_task", window_id)  # one more delivery: nothing to do
    time.sleep(1)

    window = ExtractionWindow.objects.get()
    assert (window.status, window.attempts, window.written) == ("ready", 2, 2)
    assert sorted(MemoryRecord.objects.values_list("text", flat=True)) == ["Heet Anna.", "Woont in Delft."]
    assert len(fake_model.requests) == 2


def test_two_workers_racing_over_a_hundred_windows_read_each_once(tenant, fake_model, broker):
    """Every window handed to both workers: each is claimed and read once, each record written once."""
    switch_put(tenant.client(), tenant.index.id)
    for number in range(100):
        conversation(organisation=tenant.organisation, key=tenant.key, subject=f"person-{number}", messages=[f"Mijn nummer is {number}."])
    window_ids = extraction_switch_plan(index_id=tenant.index.id).window_ids
    assert len(window_ids) == 100

    def answer(request_body):
        first = json.loads(request_body["messages"][-1]["content"])["items"][0]
        return extraction_answer([add(f"Zegt: {first['text']}", item_ids=[first["id"]])])

    fake_model.respond(answer, times=None)
    broker.start_worker()
    broker.start_worker()
    for window_id in window_ids + window_ids:
        broker.send("extraction.tasks.extraction_window_task", window_id)

    wait_for(lambda: ExtractionWindow.objects.filter(status="ready").count() == 100, timeout=120, what="every window to be read")
    time.sleep(1)  # the second deliveries finish

    assert set(window_request_counts(fake_model).values()) == {1}
    assert len(fake_model.requests) == 100
    assert set(ExtractionWindow.objects.values_list("status", "attempts")) == {("ready", 1)}
    texts = list(MemoryRecord.objects.values_list("text", flat=True))
    assert len(texts) == len(set(texts)) == 100
