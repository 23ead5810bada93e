"""Store lessons (R-9.3, R-13.2): enough of her unused episodes that went the same way → one
metered, pseudonymised helper-model call → one untrusted `lesson` of hers; the episodes are used."""
from __future__ import annotations

import pytest

from core_memory.base.callers import Caller
from core_memory.llm.models import TokenUsage
from core_memory.persons.services import person_update
from maintenance.models import EpisodeUse, MaintenanceJob
from memory.models import MemoryRecord
from stores.models import KnowledgeIndex
from tests.maintenance.builders import STORE_LESSON, asked, episode, lesson, sections, shown
from tests.fake_model import completion

pytestmark = pytest.mark.django_db


@pytest.fixture
def lessons_on(tenant):
    sections(tenant.index, lessons={"enabled": True, "min_episodes": 3})


def her_episodes(tenant, count: int, *, result: str = "succeeded", subject: str = "anna"):
    return [
        episode(
            tenant.index,
            f"Anna wilde factuur {number} per mail naar anna@example.nl; verstuurd.",
            subject=subject,
            result=result,
            intent=f"Anna wilde factuur {number} versturen",
            tools=["mail"],
        )
        for number in range(count)
    ]


def lessons_of(subject: str):
    return list(MemoryRecord.objects.filter(type="lesson", subject=subject))


def test_enough_episodes_that_went_well_teach_her_one_untrusted_lesson(tenant, lessons_on, fake_model, run_store):
    """R-9.3: one call, shown the episodes pseudonymised; her lesson, untrusted, written by Core;
    the episodes used."""
    episodes = her_episodes(tenant, 3)
    fake_model.answer(lesson("Stuur facturen meteen per mail naar <EMAIL_1>."), format_name=STORE_LESSON)

    summary = run_store()

    (request,) = asked(fake_model, STORE_LESSON)
    assert request.body["response_format"]["json_schema"]["strict"] is True
    assert shown(request) == {
        "result": "succeeded",
        "episodes": [
            {"intent": f"<PERSON_1> wilde factuur {number} versturen", "text": f"<PERSON_1> wilde factuur {number} per mail naar <EMAIL_1>; verstuurd.", "tools": ["mail"]}
            for number in range(3)
        ],
    }
    assert "anna" not in request.body["messages"][-1]["content"].lower()
    (written,) = lessons_of("anna")
    assert (written.text, written.trusted, written.source, written.subject, written.metadata) == (
        "Stuur facturen meteen per mail naar anna@example.nl.", False, "maintenance", "anna",
        {"lesson.kind": "workflow", "lesson.basis": "episodes"},
    )
    assert written.structured == {"result": "succeeded", "episode_ids": [each.id for each in episodes]}
    assert set(EpisodeUse.objects.values_list("episode_id", "lesson_id")) == {(each.id, written.id) for each in episodes}
    assert (summary["lessons"], summary["model_calls"]) == (1, 1)
    assert TokenUsage.objects.get(organisation=tenant.organisation).total_tokens == 92


def test_failed_episodes_teach_a_pitfall(tenant, lessons_on, fake_model, run_store):
    her_episodes(tenant, 3, result="failed")
    fake_model.answer(lesson("Controleer het adres voor het versturen."), format_name=STORE_LESSON)

    run_store()

    assert shown(asked(fake_model, STORE_LESSON)[0])["result"] == "failed"
    assert lessons_of("anna")[0].metadata["lesson.kind"] == "pitfall"


def test_used_episodes_teach_nothing_again(tenant, lessons_on, fake_model, run_store):
    """R-9.3: only episodes not yet used count; two new ones are too few."""
    her_episodes(tenant, 3)
    run_store()
    her_episodes(tenant, 2)

    summary = run_store()

    assert (len(asked(fake_model, STORE_LESSON)), summary["lessons"], len(lessons_of("anna"))) == (1, 0, 1)


def test_episodes_that_went_different_ways_or_unknown_are_not_enough(tenant, lessons_on, fake_model, run_store):
    """R-9.3: all succeeded or all failed; `unknown` never counts."""
    her_episodes(tenant, 2, result="succeeded")
    her_episodes(tenant, 2, result="failed")
    her_episodes(tenant, 3, result="unknown")

    run_store()

    assert asked(fake_model, STORE_LESSON) == []


def test_each_person_learns_from_her_own_episodes_only(tenant, lessons_on, fake_model, run_store):
    """R-9.3: a lesson is hers only; another person's episodes are never shown in her call."""
    her_episodes(tenant, 3, subject="anna")
    her_episodes(tenant, 2, subject="bram")
    episode(tenant.index, "Gedeelde sessie.", subject=None)

    run_store()

    assert len(asked(fake_model, STORE_LESSON)) == 1
    assert (len(lessons_of("anna")), len(lessons_of("bram"))) == (1, 0)


def test_nothing_is_sent_for_a_person_whose_rules_forbid_the_helper_model(tenant, lessons_on, fake_model, run_store):
    """R-9.3, R-3.4."""
    person_update(caller=Caller.system(organisation_id=tenant.organisation.id, actor="test"), organisation=tenant.organisation, subject="anna", helper_model_may_read=False)
    her_episodes(tenant, 3)

    run_store()

    assert (asked(fake_model, STORE_LESSON), lessons_of("anna"), EpisodeUse.objects.count()) == ([], [], 0)


def test_lessons_off_is_the_default(tenant, fake_model, run_store):
    """R-4.3: `lessons.enabled` is false until a store turns it on."""
    her_episodes(tenant, 5)

    assert run_store()["analyses"]["lessons"] is False
    assert asked(fake_model, STORE_LESSON) == []


def test_switching_lessons_on_reads_the_episodes_written_before(tenant, fake_model, run_store):
    """R-4.3: the first run after it is switched on reads the store's episodes once."""
    her_episodes(tenant, 3)
    run_store()
    sections(tenant.index, lessons={"enabled": True, "min_episodes": 3})

    run_store()

    assert len(lessons_of("anna")) == 1


@pytest.mark.parametrize("content", ['{"lesson": ""}', '{"lesson": 7}', '{"advice": "x"}', '{"lesson": "' + "lang " * 200 + '"}', "[]"])
def test_an_answer_of_the_wrong_shape_writes_nothing_and_uses_no_episode(tenant, lessons_on, fake_model, run_store, content):
    """R-13: `invalid_model_output`; her episodes stay unused for a later lesson."""
    her_episodes(tenant, 3)
    fake_model.answer(completion(content), format_name=STORE_LESSON)

    summary = run_store()

    assert summary["errors"] == {"invalid_model_output": 1}
    assert (lessons_of("anna"), EpisodeUse.objects.count()) == ([], 0)
    assert MaintenanceJob.objects.get().error_code == "invalid_model_output"


def test_a_lesson_she_has_in_the_same_words_is_confirmed(tenant, lessons_on, fake_model, run_store):
    """R-5.4: the second store lesson in the same words confirms the first."""
    her_episodes(tenant, 3)
    run_store()
    her_episodes(tenant, 3)

    summary = run_store()

    (only,) = lessons_of("anna")
    assert (only.confirmations, summary["lessons"], EpisodeUse.objects.count()) == (1, 0, 6)


def test_a_lesson_she_has_in_nearly_the_same_words_is_confirmed_where_the_index_embeds(
    tenant, lessons_on, vectors, fake_model, run_store
):
    """R-8.11's rule for store lessons too: nearly the same words confirm her lesson."""
    KnowledgeIndex.objects.filter(pk=tenant.index.pk).update(embeddings=True)
    her_episodes(tenant, 3)
    fake_model.answer(lesson("Vraag eerst naar het klantnummer."), format_name=STORE_LESSON)
    run_store()
    vectors(*lessons_of("anna"))
    her_episodes(tenant, 3)
    fake_model.answer(lesson("Vraag altijd eerst om het klantnummer."), format_name=STORE_LESSON)

    summary = run_store()

    assert [(each.text, each.confirmations) for each in lessons_of("anna")] == [("Vraag eerst naar het klantnummer.", 1)]
    assert summary["lessons"] == 0


def test_a_lesson_is_never_shown_to_a_colleague(tenant, lessons_on, fake_model, run_store):
    """R-9.3: her lesson is hers: a request for another person does not see it."""
    her_episodes(tenant, 3)
    run_store()

    bram = tenant.client(subject="bram").get(f"/v1/memory?index_id={tenant.index.id}&type=lesson").json()["data"]
    anna = tenant.client(subject="anna").get(f"/v1/memory?index_id={tenant.index.id}&type=lesson").json()["data"]

    assert (bram, [record["subject"] for record in anna]) == ([], ["anna"])
