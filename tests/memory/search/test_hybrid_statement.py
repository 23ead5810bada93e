"""A person's hybrid search reads its candidates by the statements written once in SQL
(memory.search.hybrid) and answers exactly what the ORM's statements answer."""
import pytest

from core_memory.base.callers import Caller
from memory.models import MemoryRecord, RecordEmbedding
from memory.search import SearchFilters, pipeline, record_search
from memory.search import shared as shared_module
from stores.selectors import index_find_available
from tests.memory.search.test_hot import FILTERS, NOW, store_write

pytestmark = pytest.mark.django_db

# With words the store holds, with none of them (the vectors alone), and with no word at all.
QUESTIONS = ["Acme facturen", "how does Globex want its invoices", "offerte per post", "contract Hooli e-mail", "koffie", "?!"]


@pytest.fixture
def store(write, embedding_index, vectors):
    """test_hot's store in an index that embeds, each record with its vector (the expired one's kept
    until maintenance ends it)."""
    written = store_write(write, index=embedding_index)
    vectors(*written)
    assert RecordEmbedding.objects.unscoped().filter(record_id=written[-2].pk).exists()
    return written


def _answer(tenant, index, question: str, filters: SearchFilters, *, exhaustive: bool = False) -> list[tuple]:
    caller = Caller(key=tenant.key, subject="anna")
    index = index_find_available(caller=caller, index_id=index.id)
    return [
        (record.id, score, record.similarity, record.text_score, record.effective_confidence, record.text, record.metadata, record.created_at)
        for record, score in record_search(caller=caller, index=index, query=question, filters=filters, now=NOW, exhaustive=exhaustive)
    ]


def _both(monkeypatch, tenant, index, filters: SearchFilters, **options) -> None:
    for question in QUESTIONS:
        shared_module.forget()  # the shared set's words read afresh, as by a new process
        written = _answer(tenant, index, question, filters, **options)
        monkeypatch.setattr(pipeline, "HOT_STATEMENT", False)
        built = _answer(tenant, index, question, filters, **options)
        monkeypatch.setattr(pipeline, "HOT_STATEMENT", True)
        assert written == built, question


@pytest.mark.parametrize("filters", FILTERS)
def test_a_persons_hybrid_search_answers_as_the_orms_statements_do(tenant, store, embedding_index, monkeypatch, filters):
    """The same hits, scores, similarities and fields by either way, for her types, times and limit."""
    read = []
    real = pipeline.person_hybrid_rows
    monkeypatch.setattr(pipeline, "person_hybrid_rows", lambda **arguments: read.append(arguments["query_vector"]) or real(**arguments))
    _both(monkeypatch, tenant, embedding_index, filters)
    assert len(read) == len(QUESTIONS) and all(vector is not None for vector in read)
    assert any(hit[2] is not None for question in QUESTIONS for hit in _answer(tenant, embedding_index, question, filters))


def test_the_exhaustive_ranking_by_the_written_statements_is_the_orms(tenant, store, embedding_index, monkeypatch):
    """Every vector compared, by either way: the same answer."""
    _both(monkeypatch, tenant, embedding_index, SearchFilters(limit=50), exhaustive=True)


def test_the_records_no_search_may_find_stay_unfound_by_the_written_statements(tenant, store, embedding_index):
    """Deleted, expired and replaced records, and another person's, are not candidates, by words or by meaning."""
    found = {text for question in QUESTIONS for _i, _s, _v, _t, _e, text, _m, _c in _answer(tenant, embedding_index, question, SearchFilters(limit=50))}
    assert found and not {"Acme facturen verwijderd", "Acme facturen verlopen", store[0].text} & found
    assert all(MemoryRecord.objects.unscoped().get(text=text).subject in (None, "anna") for text in found)


@pytest.mark.parametrize("filters", FILTERS)
def test_with_the_shared_sets_bounded_candidates_it_answers_as_the_orms_statements_do(tenant, store, embedding_index, monkeypatch, filters):
    """R-12.5: the shared part bounded (memory.search.shared) in either way: the same hits and scores."""
    monkeypatch.setattr(shared_module, "RANKED_WHOLE", 0)
    monkeypatch.setattr(pipeline, "HOT_RANKED_WHOLE", 0)
    bounded = []
    real = pipeline.person_text_found
    monkeypatch.setattr(pipeline, "person_text_found", lambda **arguments: bounded.append(arguments["bounded"]) or real(**arguments))
    _both(monkeypatch, tenant, embedding_index, filters)
    assert any(found is not None and found.ids for found in bounded)
    shared_module.forget()
