"""Which threads a run reads and how they are cut into windows (R-8.3, R-8.9, R-8.10, R-1.4)."""
from datetime import timedelta

import pytest
from django.utils import timezone

from core_memory.agents.models import Agent
from core_memory.pii.models import ThreadPlaceholders
from core_memory.threads.models import Item
from core_memory.threads.services import thread_agent_record
from extraction.models import ExtractionRun, ExtractionSwitch, ExtractionWindow
from extraction.services.planning import extraction_switch_plan, extraction_windows_recover
from memory.models import MemoryRecord
from tests.extraction.builders import add, conversation, extraction_answer, items_add, shown, switch_put

pytestmark = pytest.mark.django_db


def windows() -> list[tuple]:
    return sorted(ExtractionWindow.objects.values_list("thread_id", "first_position", "last_position", "status"))


def read_threads(model) -> set[str]:
    """The threads whose items the model was shown."""
    item_ids = {item["id"] for request in model.requests for item in shown(request)["items"]}
    return set(Item.objects.filter(id__in=item_ids).values_list("thread_id", flat=True))


def test_a_thread_is_read_once_it_has_been_quiet_for_thirty_minutes(tenant, switch, fake_model, run_extraction):
    """R-8.3."""
    last = timezone.now() - timedelta(minutes=29)
    thread, _ = conversation(organisation=tenant.organisation, key=tenant.key, messages=["Hoi"], at=last)

    assert run_extraction()["switches"][0]["threads"] == 0
    assert run_extraction("--store", tenant.index.id, now=last + timedelta(minutes=30))["switches"][0]["threads"] == 1
    assert read_threads(fake_model) == {thread.id}


def test_with_person_skips_threads_that_name_nobody_and_all_reads_them(tenant, fake_model, run_extraction):
    """R-8.3, R-8.4: a thread of nobody writes shared records, with `threads: all` only."""
    switch_put(tenant.client(), tenant.index.id)
    anna, _ = conversation(organisation=tenant.organisation, key=tenant.key, messages=["Ik heet Anna."])
    nobody, items = conversation(organisation=tenant.organisation, key=tenant.key, subject=None, messages=["Het kantoor sluit om vijf."])

    run_extraction()
    assert read_threads(fake_model) == {anna.id}

    switch_put(tenant.client(), tenant.index.id, threads="all")
    fake_model.answer(extraction_answer([add("Het kantoor sluit om vijf uur.", item_ids=[items[0].id])]))
    run_extraction("--store", tenant.index.id)

    assert read_threads(fake_model) == {anna.id, nobody.id}
    assert MemoryRecord.objects.get().subject is None


def test_filters_keep_threads_of_the_named_keys_and_agents_and_both_must_hold(tenant, fake_model, run_extraction):
    """R-8.3: key_ids, agent_ids, and with both a thread meets both."""
    other_key = tenant.key_client(name="other")[1]
    agent = Agent.objects.create(organisation=tenant.organisation, name="desk")
    by_key, _ = conversation(organisation=tenant.organisation, key=tenant.key, messages=["a"])
    by_other, _ = conversation(organisation=tenant.organisation, key=other_key, messages=["b"])
    answered, _ = conversation(organisation=tenant.organisation, key=other_key, messages=["c"])
    thread_agent_record(thread=answered, agent_id=agent.id)
    both, _ = conversation(organisation=tenant.organisation, key=tenant.key, messages=["d"])
    thread_agent_record(thread=both, agent_id=agent.id)

    def read_with(filters) -> set[str]:
        ExtractionWindow.objects.all().delete()
        ExtractionSwitch.objects.all().delete()
        fake_model.requests.clear()
        switch_put(tenant.client(), tenant.index.id, filters=filters)
        run_extraction()
        return read_threads(fake_model)

    assert read_with({"key_ids": [tenant.key.id]}) == {by_key.id, both.id}
    assert read_with({"agent_ids": [agent.id]}) == {answered.id, both.id}
    assert read_with({"key_ids": [tenant.key.id], "agent_ids": [agent.id]}) == {both.id}
    assert read_with({}) == {by_key.id, by_other.id, answered.id, both.id}


def test_only_items_not_yet_read_are_read(tenant, switch, fake_model, run_extraction):
    """R-8.3: a second run reads what came since, once the thread is quiet again."""
    thread, first = conversation(organisation=tenant.organisation, key=tenant.key, messages=["Eerste", "Antwoord"])
    run_extraction()
    later = items_add(thread=thread, key=tenant.key, messages=["Nieuw", "Weer"], at=timezone.now() - timedelta(minutes=40))

    run_extraction("--store", tenant.index.id)
    run_extraction("--store", tenant.index.id)

    assert [[item["id"] for item in shown(request)["items"]] for request in fake_model.requests] == [
        [item.id for item in first],
        [item.id for item in later],
    ]


def test_a_window_holds_whole_sessions_up_to_the_items_limit(tenant, switch, fake_model, settings):
    """R-8.10: a gap of 30 minutes ends a session; windows pack whole sessions; a longer
    session is read in parts, the last of which holds its end."""
    settings.CORE_EXTRACTION_WINDOW_ITEMS = 3
    start = timezone.now() - timedelta(days=1)
    thread, _ = conversation(organisation=tenant.organisation, key=tenant.key, messages=["a", "b"], at=start)
    items_add(thread=thread, key=tenant.key, messages=["c"], at=start + timedelta(hours=1))
    items_add(thread=thread, key=tenant.key, messages=["d", "e", "f", "g"], at=start + timedelta(hours=2))

    plan = extraction_switch_plan(index_id=tenant.index.id, force=True)

    assert len(plan.window_ids) == 3
    cut = [
        (window.first_position, window.last_position, [(s["first_position"], s["last_position"]) for s in window.sessions])
        for window in ExtractionWindow.objects.order_by("first_position")
    ]
    assert cut == [(0, 2, [(0, 1), (2, 2)]), (3, 5, []), (6, 6, [(3, 6)])]
    assert ExtractionWindow.objects.first().thread_id == thread.id


def test_a_switch_runs_every_schedule_minutes(tenant, fake_model, run_extraction):
    """R-8.1, R-1.4: due at once when set, then every `schedule_minutes`; --store runs it whenever."""
    switch_put(tenant.client(), tenant.index.id, schedule_minutes=60)
    now = timezone.now()

    runs = [
        run_extraction(now=now)["switches"],
        run_extraction(now=now + timedelta(minutes=59))["switches"],
        run_extraction(now=now + timedelta(minutes=60))["switches"],
        run_extraction("--store", tenant.index.id, now=now + timedelta(minutes=61))["switches"],
    ]

    assert [len(switches) for switches in runs] == [1, 0, 1, 1]
    assert ExtractionRun.objects.count() == 3


@pytest.mark.parametrize("how", ["off", "author revoked"])
def test_a_switch_that_is_not_active_reads_nothing(tenant, fake_model, run_extraction, how):
    switch_put(tenant.client(), tenant.index.id)
    conversation(organisation=tenant.organisation, key=tenant.key, messages=["Hoi"])
    if how == "off":
        tenant.client().put(f"/v1/memory/stores/{tenant.index.id}/extraction", {"enabled": False}, format="json")
    else:
        tenant.key.revoked_at = timezone.now()
        tenant.key.save()

    run_extraction("--store", tenant.index.id)

    assert fake_model.requests == []
    assert windows() == []


def test_a_thread_in_which_core_redacted_a_value_before_threads_were_marked_is_never_read(tenant, switch, fake_model, run_extraction):
    """R-8.8: judged by what is left of it; counted, not read, and not planned again."""
    thread, _ = conversation(organisation=tenant.organisation, key=tenant.key, messages=["Mail me op anna@example.nl"])
    ThreadPlaceholders.objects.create(thread=thread, organisation=tenant.organisation, values={"<EMAIL_1>": "anna@example.nl"})

    summary = run_extraction()

    assert (summary["switches"][0]["threads"], summary["switches"][0]["threads_never_read"]) == (0, 1)
    assert windows() == []
    assert run_extraction("--store", tenant.index.id)["switches"][0]["threads_never_read"] == 0


def test_at_the_monthly_token_limit_windows_are_parked_until_the_next_month(tenant, switch, fake_model, run_extraction):
    """R-8.9: no model call at the limit; the next month they are read."""
    tenant.organisation.monthly_token_limit = 100
    tenant.organisation.save()
    now = timezone.now()
    conversation(organisation=tenant.organisation, key=tenant.key, messages=["Eerste"], at=now - timedelta(hours=1))
    fake_model.answer(extraction_answer(usage=(90, 20)))
    run_extraction(now=now)
    conversation(organisation=tenant.organisation, key=tenant.key, messages=["Tweede"], at=now - timedelta(hours=1))

    parked = run_extraction("--store", tenant.index.id, now=now)
    body = tenant.client().get(f"/v1/memory/stores/{tenant.index.id}/extraction").json()
    next_month = (now.replace(day=1) + timedelta(days=32)).replace(day=2)
    resumed = run_extraction("--store", tenant.index.id, now=next_month)

    assert parked["switches"][0]["windows"]["parked"] == 1
    assert body["windows"] == {"ready": 1, "failed": 0, "queued": 0, "parked": 1}
    assert resumed["switches"][0]["windows"]["ready"] == 1
    assert len(fake_model.requests) == 2


def test_a_window_whose_claim_ran_out_is_handed_out_again(tenant, switch, fake_model, settings):
    """R-12.4: the worker holding it died; once its lease passed it is queued again."""
    conversation(organisation=tenant.organisation, key=tenant.key, messages=["Hoi"])
    plan = extraction_switch_plan(index_id=tenant.index.id)
    ExtractionWindow.objects.update(status="running", attempts=1, lease_until=timezone.now() - timedelta(seconds=1))

    recovered = extraction_windows_recover()

    assert recovered == plan.window_ids
    assert ExtractionWindow.objects.get().status == "queued"


def test_a_window_still_held_or_of_a_switch_that_is_off_is_left_alone(tenant, switch, fake_model):
    conversation(organisation=tenant.organisation, key=tenant.key, messages=["Hoi"])
    extraction_switch_plan(index_id=tenant.index.id)
    ExtractionWindow.objects.update(status="running", attempts=1, lease_until=timezone.now() + timedelta(minutes=1))

    assert extraction_windows_recover() == []
    ExtractionWindow.objects.update(lease_until=timezone.now() - timedelta(minutes=1))
    ExtractionSwitch.objects.update(enabled=False)
    assert extraction_windows_recover() == []
