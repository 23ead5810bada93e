"""A person's full-text search reads its candidates by the statement written once in SQL
(memory.search.hot) and answers exactly what the ORM's statement answers."""
from dataclasses import replace
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone
from psycopg.pq import Format

from core_memory.base.callers import Caller
from memory.models import MemoryRecord
from memory.search import SearchFilters, pipeline, record_search
from memory.search import shared as shared_module
from memory.search.hot import _TIMESTAMPTZ, _moment_reader
from stores.selectors import index_find_available

pytestmark = pytest.mark.django_db

NOW = timezone.now()
QUESTIONS = ["Acme facturen", "how does Globex want its invoices", "offerte per post", "contract Hooli e-mail", "koffie"]


@pytest.fixture
def store(tenant, write):
    """Her records, the shared ones, another person's, and the ones no search may find: deleted,
    expired, replaced; of three types, made over two months."""
    return store_write(write)


def store_write(write, **index) -> list[MemoryRecord]:
    """`store`'s records, in `index` when given (the tenant's index else): those that may be found,
    then the deleted, the expired and the replacing one."""
    texts = [
        "Acme wil facturen per e-mail", "Globex wants its invoices as PDF", "De offerte van Hooli gaat per post",
        "Het contract van Acme loopt af", "Acme facturen per post, niet per e-mail", "Initech invoices by e-mail",
    ]
    made = []
    for number, text in enumerate(texts * 4):
        subject = ("anna", None, "bram")[number % 3]
        record = write(f"{text} {number}", type=("fact", "preference", "commitment")[number % 3], subject=subject, **index)
        MemoryRecord.objects.filter(pk=record.pk).update(created_at=NOW - timedelta(days=number * 3), metadata={"n": number})
        made.append(record)
    gone = write("Acme facturen verwijderd", subject="anna", **index)
    MemoryRecord.objects.filter(pk=gone.pk).update(status=MemoryRecord.Status.DELETED)
    expired = write("Acme facturen verlopen", **index)
    MemoryRecord.objects.filter(pk=expired.pk).update(expires_at=NOW - timedelta(hours=1))
    replacing = write("Acme facturen per fax", subject="anna", replaces=made[0].id, **index)
    return [*made, gone, expired, replacing]


FILTERS = [
    SearchFilters(),
    SearchFilters(limit=3),
    SearchFilters(types=["fact"]),
    SearchFilters(types=["fact", "commitment"], after=NOW - timedelta(days=40)),
    SearchFilters(before=NOW - timedelta(days=10)),
    SearchFilters(after=NOW - timedelta(days=50), before=NOW - timedelta(days=5), limit=50),
]


def _answer(tenant, question: str, filters: SearchFilters) -> list[tuple]:
    caller = Caller(key=tenant.key, subject="anna")
    index = index_find_available(caller=caller, index_id=tenant.index.id)
    return [
        (record.id, score, record.effective_confidence, record.retrieval_count, record.text, record.metadata, record.created_at)
        for record, score in record_search(caller=caller, index=index, query=question, filters=filters, now=NOW)
    ]


@pytest.mark.parametrize("filters", FILTERS)
def test_a_persons_full_text_search_answers_as_the_orms_statement_does(tenant, store, monkeypatch, filters):
    """The same hits, scores and fields by either statement, for her types, times and limit."""
    _compared(tenant, filters, monkeypatch)


def _compared(tenant, filters: SearchFilters, monkeypatch) -> list[list[tuple]]:
    """Each question's answer by the written statement, asserted equal to the ORM's; some found."""
    read = []
    real = pipeline.person_text_rows
    monkeypatch.setattr(pipeline, "person_text_rows", lambda **arguments: read.append(1) or real(**arguments))
    answers = []
    for question in QUESTIONS:
        hot = _answer(tenant, question, filters)
        monkeypatch.setattr(pipeline, "HOT_STATEMENT", False)
        built = _answer(tenant, question, filters)
        monkeypatch.setattr(pipeline, "HOT_STATEMENT", True)
        assert hot == built, question
        answers.append(hot)
    assert len(read) == len(QUESTIONS)
    assert any(answers)
    return answers


@pytest.mark.parametrize("filters", FILTERS)
def test_a_search_of_her_records_alone_answers_as_the_orms_statement_does(tenant, store, monkeypatch, filters):
    """Her records without the shared ones (the block's past sessions and lessons): the same hits,
    scores and fields by either statement, and none of them shared."""
    answers = _compared(tenant, replace(filters, shared=False), monkeypatch)
    found = [hit[0] for answer in answers for hit in answer]
    assert set(MemoryRecord.objects.unscoped().filter(pk__in=found).values_list("subject", flat=True)) == {"anna"}


def test_the_records_no_search_may_find_stay_unfound_by_the_written_statement(tenant, store):
    """Deleted, expired and replaced records, and another person's, are not candidates."""
    found = {text for _id, _score, _conf, _count, text, _meta, _at in _answer(tenant, "Acme facturen", SearchFilters(limit=50))}
    assert found and not {"Acme facturen verwijderd", "Acme facturen verlopen", store[0].text} & found
    assert all(MemoryRecord.objects.unscoped().get(text=text).subject in (None, "anna") for text in found)


@pytest.mark.parametrize("filters", FILTERS)
def test_with_the_shared_sets_bounded_candidates_it_answers_as_the_orms_statement_does(tenant, store, monkeypatch, filters):
    """R-12.5: the shared part bounded (memory.search.shared) in either statement: the same hits and scores."""
    monkeypatch.setattr(shared_module, "RANKED_WHOLE", 0)
    monkeypatch.setattr(pipeline, "HOT_RANKED_WHOLE", 0)
    bounded = []
    real = pipeline.person_text_rows
    monkeypatch.setattr(pipeline, "person_text_rows", lambda **arguments: bounded.append(arguments["bounded"]) or real(**arguments))
    for question in QUESTIONS:
        shared_module.forget()
        hot = _answer(tenant, question, filters)
        monkeypatch.setattr(pipeline, "HOT_STATEMENT", False)
        built = _answer(tenant, question, filters)
        monkeypatch.setattr(pipeline, "HOT_STATEMENT", True)
        assert hot == built, question
    assert any(found is not None and found.ids for found in bounded)
    shared_module.forget()


@pytest.mark.parametrize(
    "text",
    ["2026-12-06 16:37:37.215191+00", "2026-12-06 16:37:37.2+00", "2026-12-06 16:37:37+00", "2026-03-29 01:59:59.999999+00",
     "2026-12-06 17:37:37.215191+01", "0001-01-01 00:00:00+00"],
)
def test_a_candidates_moment_is_read_as_the_orm_reads_it(text):
    """R-5.10: the moments of the hits (and the creation every candidate is ranked by) are the
    ORM's, in value and in zone, whichever way the text is parsed."""
    connection.ensure_connection()
    orm = connection.connection.adapters.get_loader(_TIMESTAMPTZ, Format.TEXT)(_TIMESTAMPTZ, connection.connection)
    read = _moment_reader(connection)(text)

    assert read == orm.load(text.encode())
    assert read.tzinfo is orm.load(text.encode()).tzinfo
    assert _moment_reader(connection)(None) is None
