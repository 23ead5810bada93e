"""Episodes (R-8.10) and session lessons (R-8.11), read in the same call as the records (R-13.1)."""
import json
from datetime import timedelta

import pytest
from django.utils import timezone

from core_memory.agents.models import Agent, AgentVersion
from core_memory.base.callers import Caller
from core_memory.threads.models import Response
from core_memory.threads.services import ItemDraft, thread_create
from extraction.models import ExtractionSwitch
from memory.models import MemoryRecord
from memory.services.writes import RecordDraft, record_write
from stores.models import KnowledgeIndex
from tests.extraction.builders import conversation, extraction_answer, items_add, shown, switch_put
from tests.factories import resolved_for
from tests.fake_model import completion

pytestmark = pytest.mark.django_db


@pytest.fixture
def episodes_switch(tenant, fake_model):
    return switch_put(tenant.client(), tenant.index.id, episodes=True, lessons=True).json()


def episode(first, last, *, intent="Wilde haar verhuizing plannen.", text="Wilde haar verhuizing plannen; het plan staat.", result="succeeded", reaction="none") -> dict:
    return {"first_item_id": first.id, "last_item_id": last.id, "intent": intent, "text": text, "result": result, "reaction": reaction}


def lesson(text="Vraag eerst de datum van de verhuizing.", *, kind="workflow", basis="model", item_ids=()) -> dict:
    return {"kind": kind, "text": text, "basis": basis, "item_ids": list(item_ids)}


@pytest.fixture
def session(tenant):
    """A session that came to rest an hour ago: two turns of agent `planner` v2, with a tool
    result that succeeded and one that was refused."""
    agent = Agent.objects.create(organisation=tenant.organisation, name="planner", latest_version=2)
    version = AgentVersion.objects.create(agent=agent, version=2, model="fake-chat", created_by=tenant.key.id)
    thread = thread_create(caller=Caller(key=tenant.key, subject="anna"))
    start = timezone.now() - timedelta(hours=2)
    responses = [
        Response.objects.create(organisation=tenant.organisation, thread=thread, key=tenant.key, model="fake-chat", agent_version=version, status=status)
        for status in ("completed", "completed")
    ]
    items = items_add(
        thread=thread,
        key=tenant.key,
        at=start,
        response_id=responses[0].id,
        messages=[
            ItemDraft(role="user", content="Help me mijn verhuizing te plannen."),
            ItemDraft(role="assistant", kind="tool_call", name="calendar", call_id="c1", content="{}"),
            ItemDraft(role="tool", kind="tool_result", name="calendar", call_id="c1", content='{"free": ["ma"]}'),
        ],
    )
    items += items_add(
        thread=thread,
        key=tenant.key,
        at=start + timedelta(minutes=5),
        response_id=responses[1].id,
        messages=[
            ItemDraft(role="assistant", kind="tool_call", name="memory__x__write", call_id="c2", content="{}"),
            ItemDraft(role="tool", kind="tool_result", name="memory__x__write", call_id="c2", content='{"error": {"type": "refused"}}'),
            ItemDraft(role="assistant", content="Het plan staat: maandag verhuizen."),
        ],
    )
    return {"thread": thread, "items": items, "responses": responses, "agent": agent}


def set_switch_since(moment):
    """As if episodes were switched on at `moment`."""
    ExtractionSwitch.objects.update(episodes_since=moment)


def test_a_session_that_came_to_rest_gets_one_episode_with_what_core_knows(tenant, session, episodes_switch, fake_model, run_extraction):
    """R-8.10, R-13.1: Core fills times, ids, response_ids, agent and version, tools and the result basis."""
    set_switch_since(timezone.now() - timedelta(days=1))
    items = session["items"]
    fake_model.answer(extraction_answer(episodes=[episode(items[0], items[-1])], lessons=[]))

    run_extraction()

    data = shown(fake_model.requests[0])
    assert data["sessions"] == [
        {
            "first_item_id": items[0].id,
            "last_item_id": items[-1].id,
            "from": items[0].created_at.isoformat(),
            "to": items[-1].created_at.isoformat(),
        }
    ]
    schema = fake_model.requests[0].body["response_format"]["json_schema"]["schema"]
    assert set(schema["properties"]) == {"records", "episodes", "lessons"}
    record = MemoryRecord.objects.get(type="episode")
    assert (record.subject, record.text, record.confidence, record.source) == (
        "anna",
        "Wilde haar verhuizing plannen; het plan staat.",
        1.0,
        "extraction",
    )
    assert record.structured == {
        "from": items[0].created_at.isoformat(),
        "to": items[-1].created_at.isoformat(),
        "thread_id": session["thread"].id,
        "first_item_id": items[0].id,
        "last_item_id": items[-1].id,
        "intent": "Wilde haar verhuizing plannen.",
        "result": "succeeded",
        "result_basis": "judge",
        "response_ids": [response.id for response in session["responses"]],
        "agent_id": session["agent"].id,
        "agent_version": 2,
        "tools": [{"name": "calendar", "status": "ok"}, {"name": "memory__x__write", "status": "error"}],
    }
    assert record.provenance == {"thread_id": session["thread"].id, "item_ids": [items[0].id, items[-1].id], "response_id": session["responses"][1].id}


@pytest.mark.parametrize(
    ("reaction", "failed_response", "result", "expected"),
    [
        ("positive", True, "succeeded", ("succeeded", "reaction")),
        ("negative", False, "succeeded", ("succeeded", "reaction")),
        ("none", True, "succeeded", ("failed", "records")),
        ("none", False, "unknown", ("unknown", "judge")),
    ],
)
def test_the_result_basis_is_the_reaction_else_a_failed_response_else_the_judge(
    tenant, session, episodes_switch, fake_model, run_extraction, reaction, failed_response, result, expected
):
    """R-8.10, R-13.1: `records` makes the result `failed`."""
    set_switch_since(timezone.now() - timedelta(days=1))
    if failed_response:
        Response.objects.filter(pk=session["responses"][1].pk).update(status="incomplete")
    items = session["items"]
    fake_model.answer(extraction_answer(episodes=[episode(items[0], items[-1], result=result, reaction=reaction)], lessons=[]))

    run_extraction()

    structured = MemoryRecord.objects.get(type="episode").structured
    assert (structured["result"], structured["result_basis"]) == expected


def test_an_unclear_intent_is_left_out(tenant, session, episodes_switch, fake_model, run_extraction):
    set_switch_since(timezone.now() - timedelta(days=1))
    items = session["items"]
    fake_model.answer(extraction_answer(episodes=[episode(items[0], items[-1], intent=None)], lessons=[]))

    run_extraction()

    assert "intent" not in MemoryRecord.objects.get(type="episode").structured


def test_a_session_that_came_to_rest_before_the_switch_was_set_gets_no_episode(tenant, session, episodes_switch, fake_model, run_extraction):
    """R-8.10: episodes are not asked for; its records still are."""
    items = session["items"]
    fake_model.answer(extraction_answer(episodes=[episode(items[0], items[-1])], lessons=[lesson()]))

    run_extraction()

    assert "sessions" not in shown(fake_model.requests[0])
    assert set(fake_model.requests[0].body["response_format"]["json_schema"]["schema"]["properties"]) == {"records"}
    assert not MemoryRecord.objects.filter(type__in=["episode", "lesson"]).exists()


def test_a_session_that_comes_to_rest_after_the_switch_was_set_gets_its_episode(tenant, episodes_switch, fake_model, run_extraction):
    """R-8.10: sessions count from the moment the switch is set."""
    thread, items = conversation(organisation=tenant.organisation, key=tenant.key, messages=["Plan mijn dag.", "Klaar."], at=timezone.now() - timedelta(minutes=5))
    fake_model.answer(extraction_answer(episodes=[episode(items[0], items[-1])], lessons=[]))

    run_extraction(now=timezone.now() + timedelta(minutes=40))

    assert MemoryRecord.objects.get(type="episode").structured["thread_id"] == thread.id


def test_each_session_gets_one_episode_matched_by_its_items(tenant, episodes_switch, fake_model, run_extraction):
    """Two sessions in one window: each note is matched to its session; a second note for one is ignored."""
    set_switch_since(timezone.now() - timedelta(days=1))
    start = timezone.now() - timedelta(hours=5)
    thread, first = conversation(organisation=tenant.organisation, key=tenant.key, messages=["Ochtend", "Goedemorgen"], at=start)
    second = items_add(thread=thread, key=tenant.key, messages=["Middag", "Goedemiddag"], at=start + timedelta(hours=2))
    fake_model.answer(
        extraction_answer(
            episodes=[
                episode(first[0], first[1], text="Ochtendgroet."),
                episode(second[1], second[1], text="Middaggroet."),
                episode(second[0], second[0], text="Nog een voor de middag."),
                {**episode(first[0], first[1]), "first_item_id": "itm_unknown", "last_item_id": "itm_unknown", "text": "Onbekend."},
            ],
            lessons=[],
        )
    )

    run_extraction()

    episodes = {record.text: record.structured for record in MemoryRecord.objects.filter(type="episode")}
    assert set(episodes) == {"Ochtendgroet.", "Middaggroet."}
    assert (episodes["Middaggroet."]["first_item_id"], episodes["Middaggroet."]["last_item_id"]) == (second[0].id, second[1].id)


def test_a_thread_that_names_nobody_gets_a_shared_episode_and_no_lessons(tenant, fake_model, run_extraction):
    """R-8.10, R-8.11."""
    switch_put(tenant.client(), tenant.index.id, threads="all", episodes=True, lessons=True)
    set_switch_since(timezone.now() - timedelta(days=1))
    _, items = conversation(organisation=tenant.organisation, key=tenant.key, subject=None, messages=["Wat is de wifi-code?", "Staat op de kaart."])
    fake_model.answer(extraction_answer(episodes=[episode(items[0], items[-1])], lessons=[lesson()]))

    run_extraction()

    assert set(fake_model.requests[0].body["response_format"]["json_schema"]["schema"]["properties"]) == {"records", "episodes"}
    assert "lessons" not in fake_model.requests[0].body["messages"][0]["content"].split("Answer with")[1]
    assert list(MemoryRecord.objects.values_list("type", "subject")) == [("episode", None)]


def test_session_lessons_are_her_untrusted_lesson_records_at_most_three(tenant, session, episodes_switch, fake_model, run_extraction):
    """R-8.11: metadata lesson.kind and lesson.basis."""
    set_switch_since(timezone.now() - timedelta(days=1))
    items = session["items"]
    fake_model.answer(
        extraction_answer(
            episodes=[episode(items[0], items[-1])],
            lessons=[
                lesson("Vraag eerst de datum.", item_ids=[items[0].id]),
                lesson("Een geweigerde schrijfactie: geef het type mee.", kind="pitfall", basis="reaction"),
                lesson("Derde les."),
                lesson("Vierde les, te veel."),
            ],
        )
    )

    run_extraction()

    lessons = MemoryRecord.objects.filter(type="lesson").order_by("text")
    assert [(record.text, record.metadata, record.subject, record.trusted) for record in lessons] == [
        ("Derde les.", {"lesson.kind": "workflow", "lesson.basis": "model"}, "anna", False),
        ("Een geweigerde schrijfactie: geef het type mee.", {"lesson.kind": "pitfall", "lesson.basis": "reaction"}, "anna", False),
        ("Vraag eerst de datum.", {"lesson.kind": "workflow", "lesson.basis": "model"}, "anna", False),
    ]
    assert lessons.get(text="Vraag eerst de datum.").item_ids == [items[0].id]


def test_a_lesson_she_already_has_in_the_same_words_is_confirmed(tenant, session, episodes_switch, fake_model, run_extraction):
    """R-8.11: the same words, case and final punctuation folded (R-5.4)."""
    set_switch_since(timezone.now() - timedelta(days=1))
    items = session["items"]
    fake_model.answer(extraction_answer(episodes=[episode(items[0], items[2])], lessons=[lesson("Vraag eerst de datum.")]))
    run_extraction()
    later = items_add(thread=session["thread"], key=tenant.key, messages=["Nog een verhuizing.", "Gepland."], at=timezone.now() - timedelta(hours=1))
    fake_model.answer(extraction_answer(episodes=[episode(later[0], later[1])], lessons=[lesson("vraag eerst de datum")]))

    summary = run_extraction("--store", tenant.index.id)

    lesson_record = MemoryRecord.objects.get(type="lesson")
    assert lesson_record.confirmations == 1
    assert summary["switches"][0]["confirmed"] == 1


def test_a_lesson_she_has_in_nearly_the_same_words_is_confirmed_where_the_index_embeds(
    tenant, session, vectors, fake_model, run_extraction
):
    """R-8.11: nearly the same words (memory.embedding.selectors.lesson_near_duplicate) confirm
    her lesson instead of adding a second one."""
    KnowledgeIndex.objects.filter(pk=tenant.index.pk).update(embeddings=True)
    switch_put(tenant.client(), tenant.index.id, episodes=True, lessons=True)
    set_switch_since(timezone.now() - timedelta(days=1))
    stored = record_write(
        caller=Caller(key=tenant.key, subject="anna", actor="test"),
        index=resolved_for(tenant.key, KnowledgeIndex.objects.get(pk=tenant.index.pk)),
        draft=RecordDraft(
            type="lesson",
            text="Vraag eerst naar het klantnummer.",
            source="extraction",
            trusted=False,
        ),
    ).record
    vectors(stored)
    items = session["items"]
    fake_model.answer(
        extraction_answer(episodes=[episode(items[0], items[-1])], lessons=[lesson("Vraag altijd eerst om het klantnummer.")])
    )

    summary = run_extraction()

    assert [(record.text, record.confirmations) for record in MemoryRecord.objects.filter(type="lesson")] == [
        ("Vraag eerst naar het klantnummer.", 1)
    ]
    assert summary["switches"][0]["confirmed"] == 1


@pytest.mark.parametrize(
    "bad",
    [
        {"result": "great"},
        {"reaction": "happy"},
        {"text": ""},
        {"first_item_id": 3},
    ],
)
def test_an_episode_not_of_the_shape_fails_the_window(tenant, session, episodes_switch, fake_model, run_extraction, bad):
    set_switch_since(timezone.now() - timedelta(days=1))
    items = session["items"]
    fake_model.answer(extraction_answer(episodes=[{**episode(items[0], items[-1]), **bad}], lessons=[]))

    run_extraction()

    assert MemoryRecord.objects.count() == 0
    assert tenant.client().get(f"/v1/memory/stores/{tenant.index.id}/extraction").json()["error_code"] == "invalid_model_output"


def test_a_lesson_not_of_the_shape_fails_the_window(tenant, session, episodes_switch, fake_model, run_extraction):
    set_switch_since(timezone.now() - timedelta(days=1))
    items = session["items"]
    fake_model.answer(extraction_answer(episodes=[episode(items[0], items[-1])], lessons=[{**lesson(), "kind": "tip"}]))

    run_extraction()

    assert MemoryRecord.objects.count() == 0


def test_episodes_and_lessons_not_asked_for_are_not_read(tenant, switch, session, fake_model, run_extraction):
    """R-13.1: asked for (and read) only when the switch has them on, whatever they hold."""
    fake_model.answer(completion(json.dumps({"records": [], "episodes": "nonsense", "lessons": [1, 2]})))

    run_extraction()

    assert tenant.client().get(f"/v1/memory/stores/{tenant.index.id}/extraction").json()["windows"]["ready"] == 1
    assert MemoryRecord.objects.count() == 0


def test_two_sessions_told_in_the_same_words_are_two_episodes(tenant, episodes_switch, fake_model, run_extraction):
    """R-8.10: one episode for every session; an episode is never a confirmation of another (R-5.4)."""
    set_switch_since(timezone.now() - timedelta(days=1))
    start = timezone.now() - timedelta(hours=5)
    thread, first = conversation(organisation=tenant.organisation, key=tenant.key, messages=["Hoi", "Hallo"], at=start)
    second = items_add(thread=thread, key=tenant.key, messages=["Hoi", "Hallo"], at=start + timedelta(hours=2))
    fake_model.answer(
        extraction_answer(episodes=[episode(first[0], first[1], text="Groette."), episode(second[0], second[1], text="Groette.")], lessons=[])
    )

    run_extraction()

    assert sorted(record.structured["first_item_id"] for record in MemoryRecord.objects.filter(type="episode")) == sorted([first[0].id, second[0].id])
