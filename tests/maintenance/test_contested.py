"""Contested records (R-9.2, R-13.3): maintenance asks the helper model about textually close pairs
of one person's records (or of the shared ones), marks both records of each contradicting pair
and links them; the mark shows wherever a record is shown, and a later correction, a
confirmation by correction or a deletion clears it."""
from __future__ import annotations

import json

import pytest

from core_memory.base.callers import Caller
from core_memory.llm.models import TokenUsage
from core_memory.persons.services import person_update
from maintenance.models import ContradictionCheck, MaintenanceJob
from memory.injection.walk import injection_block_build
from memory.embedding.services import record_embeddings_refresh
from memory.models import MemoryRecord
from memory.services.changes import record_delete, record_update
from memory.services.writes import RecordDraft, record_write
from tests.fake_retrieval_models import FakeEmbeddingServer, hashed_vector
from tests.maintenance.builders import CONTRADICTIONS, asked, contradictions, sections, shown, touched
from tests.memory.injection.builders import injecting_key
from tests.memory.tools.builders import call, search_name, tool_key

pytestmark = pytest.mark.django_db


def contradicting(record: MemoryRecord) -> list[str]:
    return sorted(record.contradicts.values_list("id", flat=True))


def fresh(record: MemoryRecord) -> MemoryRecord:
    return MemoryRecord.objects.get(pk=record.pk)


@pytest.fixture
def delft_and_leiden(write):
    return write("Woont in Delft", subject="anna"), write("Woont in Leiden", subject="anna")


def test_a_contradicting_pair_of_her_records_is_marked_and_linked(tenant, write, fake_model, run_store):
    """R-9.2: only textually close pairs of the same person and type are asked about, in one call;
    both records of the pair the model names are marked contested and point at each other."""
    delft, leiden = write("Woont in Delft", subject="anna"), write("Woont in Leiden", subject="anna")
    jazz = write("Houdt van jazz", type="preference", subject="anna")
    brams = write("Woont in Delft", subject="bram")
    shared = write("Kantoor in Delft")
    fake_model.answer(contradictions((delft.id, leiden.id)), format_name=CONTRADICTIONS)

    summary = run_store()

    (request,) = asked(fake_model, CONTRADICTIONS)
    assert request.body["response_format"]["json_schema"]["strict"] is True
    assert shown(request) == {
        "records": [{"id": delft.id, "type": "fact", "text": "Woont in Delft"}, {"id": leiden.id, "type": "fact", "text": "Woont in Leiden"}],
        "pairs": [[delft.id, leiden.id]],
    }
    assert (summary["contested"], summary["model_calls"], summary["jobs"]["done"], summary["errors"]) == (1, 1, 1, {})
    assert [fresh(record).contested for record in (delft, leiden, jazz, brams, shared)] == [True, True, False, False, False]
    assert (contradicting(delft), contradicting(leiden)) == ([leiden.id], [delft.id])
    assert fresh(delft).history.first().history_change_reason == "contested by maintenance"
    assert set(ContradictionCheck.objects.values_list("first_id", "second_id", "contradicts")) == {(delft.id, leiden.id, True)}


def test_shared_records_are_judged_among_themselves(tenant, write, fake_model, run_store):
    """R-9.2: the shared set is one more 'person': a shared record is never paired with hers."""
    nine, ten = write("Het kantoor opent om 9 uur"), write("Het kantoor opent om 10 uur")
    write("Het kantoor opent om 9 uur", subject="anna")
    fake_model.answer(contradictions((ten.id, nine.id)), format_name=CONTRADICTIONS)

    run_store()

    requests = asked(fake_model, CONTRADICTIONS)
    assert [shown(request)["pairs"] for request in requests] == [[sorted([nine.id, ten.id])]]
    assert (fresh(nine).contested, fresh(ten).contested) == (True, True)


def test_the_mark_shows_in_the_list_search_the_search_tool_and_the_injection_block(tenant, delft_and_leiden, fake_model, run_store):
    """R-9.2, R-5.6, R-6.4, R-7.6: wherever a record is shown."""
    delft, leiden = delft_and_leiden
    fake_model.answer(contradictions((delft.id, leiden.id)), format_name=CONTRADICTIONS)
    run_store()
    client = tenant.client(subject="anna")

    listed = client.get(f"/v1/memory?index_id={tenant.index.id}&contested=true").json()["data"]
    found = client.post("/v1/memory/search", {"index_id": tenant.index.id, "query": "woont"}, format="json").json()["data"]
    tool = call(tool_key(tenant), search_name(tenant.index), {"query": "woont"})
    block = injection_block_build(caller=Caller(key=injecting_key(tenant), subject="anna"), agent_version=None, topic="", now=None).text

    assert sorted(record["id"] for record in listed) == sorted([delft.id, leiden.id])
    assert [hit["contested"] for hit in found] == [True, True]
    assert [hit.get("contested") for hit in tool["hits"]] == [True, True]
    assert [json.loads(line).get("contested") for line in block.split("\n")[1:]] == [True, True]


def test_a_correction_of_either_clears_the_pair(tenant, delft_and_leiden, fake_model, run_store):
    """R-9.2: the corrected record ends and the mark goes from both; the correction is not contested."""
    delft, leiden = delft_and_leiden
    fake_model.answer(contradictions((delft.id, leiden.id)), format_name=CONTRADICTIONS)
    run_store()

    utrecht = record_write(caller=Caller(key=tenant.key, subject="anna", actor="test"), index=tenant.index, draft=RecordDraft(type="fact", text="Woont in Utrecht", replaces=leiden.id)).record

    assert [fresh(record).contested for record in (delft, leiden, utrecht)] == [False, False, False]
    assert contradicting(delft) == contradicting(leiden) == []
    assert fresh(delft).history.first().history_change_reason == "no longer contested by test"


def test_a_confirmation_by_correction_clears_the_pair(tenant, delft_and_leiden, fake_model, run_store):
    """R-9.2, R-5.4: correcting Delft into the words of Leiden confirms Leiden and ends Delft."""
    delft, leiden = delft_and_leiden
    fake_model.answer(contradictions((delft.id, leiden.id)), format_name=CONTRADICTIONS)
    run_store()

    result = record_write(caller=Caller(key=tenant.key, subject="anna", actor="test"), index=tenant.index, draft=RecordDraft(type="fact", text="woont in leiden", replaces=delft.id))

    assert (result.status, result.record.id) == ("confirmed", leiden.id)
    assert (fresh(delft).status, fresh(delft).contested, fresh(leiden).contested) == ("ended", False, False)


def test_deleting_either_clears_the_pair_but_another_contradiction_keeps_its_mark(tenant, write, fake_model, run_store):
    """R-9.2: Delft contradicts Leiden and Utrecht; deleting Leiden leaves Delft contested by Utrecht."""
    delft, leiden, utrecht = (write(f"Woont in {city}", subject="anna") for city in ("Delft", "Leiden", "Utrecht"))
    fake_model.answer(contradictions((delft.id, leiden.id), (delft.id, utrecht.id)), format_name=CONTRADICTIONS)
    run_store()

    record_delete(caller=Caller(key=tenant.key, subject="anna", actor="test"), record_id=leiden.id)

    assert [fresh(record).contested for record in (delft, leiden, utrecht)] == [True, False, True]
    assert contradicting(delft) == [utrecht.id]


def test_rewording_either_clears_the_pair_and_the_next_run_judges_it_again(tenant, delft_and_leiden, fake_model, run_store):
    """R-5.7, R-9.2: a PATCH of the text is a correction in place; a PATCH of metadata is not."""
    delft, leiden = delft_and_leiden
    fake_model.answer(contradictions((delft.id, leiden.id)), format_name=CONTRADICTIONS)
    run_store()
    record_update(caller=Caller(key=tenant.key, subject="anna", actor="test"), record_id=leiden.id, changes={"metadata": {"bron": "mail"}})
    assert fresh(leiden).contested is True

    record_update(caller=Caller(key=tenant.key, subject="anna", actor="test"), record_id=leiden.id, changes={"text": "Woonde in Leiden"})
    assert (fresh(delft).contested, fresh(leiden).contested) == (False, False)
    summary = run_store()

    assert [shown(request)["pairs"] for request in asked(fake_model, CONTRADICTIONS)] == [[[delft.id, leiden.id]], [[delft.id, leiden.id]]]
    assert (summary["contested"], fresh(delft).contested) == (0, False)


def test_what_changed_just_before_the_last_run_is_read_again_but_not_asked_about_again(tenant, delft_and_leiden, fake_model, run_store):
    """Issue 9: a transaction that committed after a run read may have written a record stamped
    before it; the next run reads the last ten minutes again, and asks nothing it already asked."""
    run_store()

    summary = run_store()

    assert (summary["changed"], summary["jobs"], len(asked(fake_model, CONTRADICTIONS))) == (
        2, {"done": 0, "failed": 0, "parked": 0, "cancelled": 0, "skipped": 0}, 1
    )


def test_a_run_asks_only_about_records_changed_since_the_last_one(tenant, write, fake_model, run_store):
    """Issue 9: nothing changed, nothing asked; a new record is paired with her close records only,
    and a pair judged before is not asked about again. (A run reads again what changed in the ten
    minutes before the last one; these records changed earlier.)"""
    delft, leiden = (touched(write(f"Woont in {city}", subject="anna"), minutes_ago=30) for city in ("Delft", "Leiden"))
    run_store()
    assert run_store()["changed"] == 0
    assert len(asked(fake_model, CONTRADICTIONS)) == 1

    gouda = write("Woont in Gouda", subject="anna")
    summary = run_store()

    latest = asked(fake_model, CONTRADICTIONS)[-1]
    assert len(asked(fake_model, CONTRADICTIONS)) == 2
    assert shown(latest)["pairs"] == sorted([sorted([delft.id, gouda.id]), sorted([leiden.id, gouda.id])])
    assert summary["changed"] == 1


def test_each_changed_record_is_paired_with_a_few_of_her_closest_records_never_all(tenant, write, fake_model, run_store):
    """Issue 9: candidates are the closest five of her records of the same type, never all pairs."""
    for number in range(12):
        write(f"Project {number} loopt via het team van Sanne", subject="anna")
    run_store()
    changed = write("Project 12 loopt via het team van Sanne", subject="anna")

    run_store()

    pairs = shown(asked(fake_model, CONTRADICTIONS)[-1])["pairs"]
    assert len(pairs) == 5
    assert all(changed.id in pair for pair in pairs)


@pytest.fixture
def coffee_and_espresso(tenant, write, vectors):
    """Her two records that contradict each other in other words, in an index that embeds, with
    their vectors; and Bram's record in the very words of one of them."""
    tenant.index.embeddings = True
    tenant.index.save(update_fields=["embeddings"])
    records = (
        write("Drinkt geen koffie", subject="anna"),
        write("Begint elke ochtend met een espresso", subject="anna"),
        write("Drinkt geen koffie", subject="bram"),
    )
    vectors(*records)
    return records


def test_a_contradiction_in_other_words_is_found_by_meaning_where_the_index_embeds(tenant, coffee_and_espresso, fake_model, run_store):
    """R-9.2: "semantically close" candidates — the nearest vectors of her records of the same
    type — besides the textually close ones; another person's vector is never paired with hers."""
    coffee, espresso, _brams = coffee_and_espresso
    fake_model.answer(contradictions((coffee.id, espresso.id)), format_name=CONTRADICTIONS)

    summary = run_store()

    (request,) = asked(fake_model, CONTRADICTIONS)
    assert shown(request)["pairs"] == [sorted([coffee.id, espresso.id])]
    assert summary["contested"] == 1
    assert (contradicting(coffee), contradicting(espresso)) == ([espresso.id], [coffee.id])


def _coffee_vectors(texts: list[str]) -> list[list[float]]:
    """A served model that reads coffee and espresso as one meaning."""
    return [hashed_vector("coffee" if "koffie" in text or "espresso" in text else text, 64) for text in texts]


def test_an_index_on_a_served_embedding_model_finds_a_contradiction_by_that_models_meaning(tenant, write, fake_model, run_store, settings, quick_retries):
    """R-9.2 for an index whose vectors are a model served elsewhere's (CORE_EMBEDDING_MODELS), with the model inside Core off."""
    with FakeEmbeddingServer(dimensions=64, embedder=_coffee_vectors) as server:
        settings.CORE_EMBEDDING_MODELS = [server.config("ext-embed")]
        settings.CORE_EMBEDDINGS = "off"
        tenant.index.embeddings, tenant.index.embedding_model = True, "ext-embed"
        tenant.index.save(update_fields=["embeddings", "embedding_model"])
        coffee, espresso = write("Drinkt geen koffie", subject="anna"), write("Begint elke ochtend met een espresso", subject="anna")
        write("Drinkt geen koffie", subject="bram")
        record_embeddings_refresh(record_ids=list(MemoryRecord.objects.values_list("id", flat=True)))
        fake_model.answer(contradictions((coffee.id, espresso.id)), format_name=CONTRADICTIONS)

        summary = run_store()

    (request,) = asked(fake_model, CONTRADICTIONS)
    assert shown(request)["pairs"] == [sorted([coffee.id, espresso.id])]
    assert summary["contested"] == 1


def test_without_embeddings_a_contradiction_in_other_words_is_not_a_candidate(coffee_and_espresso, fake_model, run_store, settings):
    """The text alone does not pair them (what the vectors add above)."""
    settings.CORE_EMBEDDINGS = "off"

    run_store()

    assert asked(fake_model, CONTRADICTIONS) == []


@pytest.mark.parametrize(
    "answer",
    [
        {"contradictions": [["only-one-id"]]},
        {"contradictions": "mem_a mem_b"},
        {"contradictions": [[1, 2]]},
        "not json",
    ],
    ids=["not-a-pair", "not-a-list", "not-ids", "not-json"],
)
def test_an_answer_of_the_wrong_shape_fails_the_job_and_writes_nothing(tenant, delft_and_leiden, fake_model, run_store, answer):
    """R-13: `invalid_model_output`, no mark, no judged pair; the call's tokens are still metered."""
    from tests.fake_model import completion

    content = answer if isinstance(answer, str) else json.dumps(answer)
    fake_model.answer(completion(content, usage=(30, 7)), format_name=CONTRADICTIONS)

    summary = run_store()

    job = MaintenanceJob.objects.get()
    assert (job.status, job.error_code, job.input_tokens, job.output_tokens) == ("failed", "invalid_model_output", 30, 7)
    assert (summary["errors"], summary["contested"]) == ({"invalid_model_output": 1}, 0)
    assert not MemoryRecord.objects.filter(contested=True).exists()
    assert not ContradictionCheck.objects.exists()
    assert TokenUsage.objects.get(organisation=tenant.organisation).total_tokens == 37


def test_an_id_the_request_did_not_show_is_ignored(tenant, delft_and_leiden, write, fake_model, run_store):
    """R-13: the model names a record of another person; nothing of it is marked."""
    delft, leiden = delft_and_leiden
    brams = write("Woont in Delft", subject="bram")
    fake_model.answer(contradictions((delft.id, brams.id)), format_name=CONTRADICTIONS)

    summary = run_store()

    assert (summary["contested"], summary["jobs"]["done"]) == (0, 1)
    assert not MemoryRecord.objects.filter(contested=True).exists()


def test_nothing_of_a_person_whose_rules_forbid_the_helper_model_is_sent(tenant, delft_and_leiden, write, fake_model, run_store):
    """R-3.4: her records are never shown to the helper model; the shared ones still are."""
    person_update(caller=Caller.system(organisation_id=tenant.organisation.id, actor="test"), organisation=tenant.organisation, subject="anna", helper_model_may_read=False)
    nine, ten = write("Het kantoor opent om 9 uur"), write("Het kantoor opent om 10 uur")

    run_store()

    assert [shown(request)["pairs"] for request in asked(fake_model, CONTRADICTIONS)] == [[sorted([nine.id, ten.id])]]


def test_a_job_planned_before_her_rules_changed_sends_nothing(tenant, delft_and_leiden, fake_model, run_maintenance):
    """R-3.4: the rule is read again when the job runs."""
    from maintenance.services.jobs import maintenance_job_run
    from maintenance.services.planning import maintenance_store_plan

    (job_id,) = maintenance_store_plan(index_id=tenant.index.id, force=True).job_ids
    person_update(caller=Caller.system(organisation_id=tenant.organisation.id, actor="test"), organisation=tenant.organisation, subject="anna", helper_model_may_read=False)

    outcome = maintenance_job_run(job_id=job_id)

    assert (outcome.status, outcome.error_code, fake_model.requests) == ("cancelled", "helper_model_may_not_read", [])


def test_a_store_whose_maintenance_is_off_is_not_looked_after(tenant, delft_and_leiden, fake_model, run_store):
    """R-9.1."""
    sections(tenant.index, maintenance={"enabled": False})

    summary = run_store()

    assert (summary["state"], summary["run_id"], fake_model.requests) == ("off", None, [])


def test_without_a_helper_model_nothing_is_asked_and_the_first_run_after_reads_everything(tenant, delft_and_leiden, fake_model, settings, run_store):
    """R-1.2: contradictions need the helper model; records written meanwhile are not forgotten."""
    settings.CORE_HELPER_MODEL = None
    assert run_store()["analyses"] == {"contested": False, "lessons": False, "promotion": False, "helper_model": False}
    settings.CORE_HELPER_MODEL = "fake-chat"

    summary = run_store()

    assert (summary["changed"], len(asked(fake_model, CONTRADICTIONS))) == (2, 1)
