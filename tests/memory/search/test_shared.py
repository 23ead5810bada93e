"""A person's search takes the shared set's full-text candidates from the words' matches its
process keeps (memory.search.shared), and answers what ranking every shared match answers."""
import random
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from core_memory.base.callers import Caller
from memory.models import MemoryRecord, SharedSetVersion
from memory.search import query_terms
from memory.search import shared as shared_module
from memory.search.shared import bounded_candidates, forget
from memory.search import SEARCH_DEPTH, SearchFilters, record_search
from memory.services.changes import record_delete, record_update
from memory.services.retrievals import records_retrieved
from memory.services.rules import text_normalise

pytestmark = pytest.mark.django_db

COMPANIES = ["Acme", "Globex", "Initech", "Hooli", "Wayne"]
DOCUMENTS = ["facturen", "offerte", "invoices", "contract", "report"]
CHANNELS = ["e-mail", "post", "telefoon", "chat"]
QUESTIONS = [
    "hoe wil Acme de facturen ontvangen",
    "how does Globex want its invoices",
    "wat weten we over het contract van Hooli",
    "Acme Acme facturen",
    "wie stuurt de offerte per post",
    "report by chat",
    "Initech",
    "facturen factureren",  # two words, one Dutch stem: both stand in one place of a record
    "e-mail",
]
NOW = timezone.now()


@pytest.fixture(autouse=True)
def nothing_kept(monkeypatch):
    """Nothing kept from another test; a shared set of 180 is bounded as a large one is."""
    monkeypatch.setattr(shared_module, "RANKED_WHOLE", 0)
    forget()
    yield
    forget()


@pytest.fixture
def store(tenant):
    """180 shared records over a few words (a word often twice, many ties) and a person's 30."""
    generator = random.Random(7)

    def text() -> str:
        words = [generator.choice(COMPANIES), "wil", generator.choice(DOCUMENTS), "per", generator.choice(CHANNELS)]
        if generator.random() < 0.3:
            words += ["en", generator.choice(DOCUMENTS)]
        if generator.random() < 0.2:
            words += ["factureren", "aan", generator.choice(COMPANIES)]
        return " ".join(words) + f" nummer {generator.randrange(10_000)}"

    texts = {text() for _ in range(260)}
    records = [
        MemoryRecord(
            organisation_id=tenant.organisation.id, index=tenant.index, subject=None if number < 180 else "anna",
            type=("fact", "preference", "commitment")[number % 3], text=text_value, normalised_text=text_normalise(text_value),
            changed_at=NOW, confidence=1.0,
        )
        for number, text_value in enumerate(sorted(texts)[:210])
    ]
    MemoryRecord.objects.bulk_create(records)
    MemoryRecord.objects.unscoped().filter(index=tenant.index, subject__isnull=True, type="commitment").update(
        created_at=NOW - timedelta(days=40)
    )
    return records


def _answer(tenant, question: str, exhaustive: bool = False, **filters):
    caller = Caller(key=tenant.key, subject="anna")
    found = record_search(caller=caller, index=tenant.index, query=question, filters=SearchFilters(**filters), exhaustive=exhaustive)
    return [(record.id, score) for record, score in found]


def _exhaustive(tenant, question: str, **arguments):
    return _answer(tenant, question, exhaustive=True, **arguments)


@pytest.mark.parametrize("question", QUESTIONS)
def test_a_persons_search_answers_what_ranking_every_shared_match_answers(tenant, store, question):
    """R-5.10, R-12.5: the same hits and scores, ties by id included, with the shared set's words kept."""
    expected = _exhaustive(tenant, question, limit=50)

    assert _answer(tenant, question, limit=50) == expected  # the words read
    assert _answer(tenant, question, limit=50) == expected  # the words kept


@pytest.mark.parametrize(
    "arguments",
    [{"types": ["preference"]}, {"after": NOW - timedelta(days=10)}, {"before": NOW - timedelta(days=10)}],
    ids=["types", "after", "before"],
)
def test_a_narrowed_search_answers_what_ranking_every_shared_match_answers(tenant, store, arguments):
    """R-5.10: types and times narrow the kept matches as they narrow the statement."""
    for question in QUESTIONS[:3]:
        assert _answer(tenant, question, limit=50, **arguments) == _exhaustive(tenant, question, limit=50, **arguments)


def test_only_the_shared_records_that_can_be_among_the_best_are_ranked(tenant, store):
    """R-12.5: a common word holds most of the shared set; a few more than the depth are ranked."""
    terms = query_terms("hoe wil Acme de facturen ontvangen")
    bounded = bounded_candidates(
        organisation_id=tenant.organisation.id, index_id=tenant.index.id, terms=terms, types=None, after=None, before=None,
        depth=SEARCH_DEPTH,
    )
    matching = MemoryRecord.objects.for_organisation(tenant.organisation).filter(subject__isnull=True).count()

    assert matching == 180
    assert SEARCH_DEPTH <= len(bounded.ids) < 80


def test_a_search_after_a_shared_change_ranks_the_whole_shared_set_in_its_one_statement(
    tenant, store, write, django_assert_num_queries
):
    """R-12.5: no query more when the kept words are out of date; the next search reads them again."""
    question = "Acme facturen per post"
    _answer(tenant, question)
    new = write("Acme facturen facturen facturen per post per post")

    with django_assert_num_queries(1):
        first = _answer(tenant, question)
    with django_assert_num_queries(2):
        again = _answer(tenant, question)
    with django_assert_num_queries(1):
        kept = _answer(tenant, question)

    assert new.id in {record_id for record_id, _ in first}
    assert first == again == kept == _exhaustive(tenant, question)


def test_a_shared_write_deletion_and_correction_each_count_at_once(tenant, store, write):
    """R-5.10: what is kept is used only at the shared set's version, which every such change raises."""
    question = "Globex contract chat"

    def hits() -> list[str]:
        answer = _answer(tenant, question, limit=50)
        assert answer == _exhaustive(tenant, question, limit=50)
        return [record_id for record_id, _ in answer]

    hits()
    written = write("Globex contract contract chat chat")
    assert written.id in hits()

    corrected = write("Initech offerte per brief", replaces=written.id)
    assert written.id not in hits()
    assert corrected.id not in hits()

    record_update(caller=Caller(key=tenant.key, subject=None, actor="test"), record_id=corrected.id, changes={"text": "Globex contract chat chat chat"})
    assert corrected.id in hits()

    record_delete(caller=Caller(key=tenant.key, subject=None, actor="test"), record_id=corrected.id)
    assert corrected.id not in hits()


def test_a_change_in_plain_sql_counts_too(tenant, store):
    """R-5.10: the database raises the version, whoever writes."""
    question = "Hooli offerte"
    _answer(tenant, question)
    shared = (
        MemoryRecord.objects.for_organisation(tenant.organisation)
        .filter(subject__isnull=True).exclude(text__icontains="hooli").exclude(text__icontains="offerte").first()
    )
    with connection.cursor() as cursor:
        cursor.execute("UPDATE memory_memoryrecord SET text = 'Hooli offerte offerte offerte Hooli' WHERE id = %s", [shared.id])

    answer = _answer(tenant, question, limit=50)
    assert shared.id in {record_id for record_id, _ in answer}
    assert answer == _exhaustive(tenant, question, limit=50)


def test_her_own_writes_retrieval_counts_and_confirmations_leave_the_shared_version_alone(tenant, store, write):
    """R-12.5: only what the shared set's ranking reads raises it: her records are ranked in the statement anyway."""
    versions = SharedSetVersion.objects.for_organisation(tenant.organisation).filter(index=tenant.index)
    before = versions.get().version
    shared = MemoryRecord.objects.for_organisation(tenant.organisation).filter(subject__isnull=True).first()

    mine = write("Anna wil facturen per post per post", subject="anna")
    records_retrieved(caller=Caller(key=tenant.key), records=[shared])
    write(shared.text)  # the same words: a confirmation

    assert versions.get().version == before
    assert mine.id in {record_id for record_id, _ in _answer(tenant, "facturen per post", limit=50)}


def test_two_words_standing_in_one_place_are_ranked_whole_again(tenant, store, django_assert_num_queries):
    """R-5.10: "facturen" and "factureren" share a Dutch stem, so a record holding either scores
    one place once, not twice: the kept matches overrate it, the search sees so in its answer and
    ranks the shared set whole in a second statement."""
    question = "facturen factureren"
    _answer(tenant, question, limit=50)

    with django_assert_num_queries(2):
        answer = _answer(tenant, question, limit=50)

    assert answer == _exhaustive(tenant, question, limit=50)


def test_a_small_shared_set_is_ranked_whole_in_the_statement(tenant, store, monkeypatch):
    """R-12.5: up to RANKED_WHOLE matches PostgreSQL ranks them faster than bounding them costs."""
    monkeypatch.setattr(shared_module, "RANKED_WHOLE", 1_000)
    bounded = bounded_candidates(
        organisation_id=tenant.organisation.id, index_id=tenant.index.id, terms=query_terms("Acme facturen"), types=None,
        after=None, before=None, depth=SEARCH_DEPTH,
    )

    assert bounded is None


def test_a_fresh_process_takes_the_words_another_process_read(tenant, store, django_assert_num_queries):
    """R-5.10: the words' matches one process read are in Valkey for the next, at the same
    version: a fresh process answers in the search's one statement, the same answer."""
    question = "hoe wil Acme de facturen ontvangen"
    _answer(tenant, question, limit=50)
    forget()  # as a freshly started process

    with django_assert_num_queries(1):
        answer = _answer(tenant, question, limit=50)

    assert answer == _exhaustive(tenant, question, limit=50)


def test_words_another_process_read_before_a_shared_change_never_decide_an_answer(tenant, store, write, django_assert_num_queries):
    """R-5.10: taken at an older version, they make the statement rank the shared set whole; the
    next search reads them again and writes them anew, for the next fresh process."""
    question = "Acme facturen per post"
    _answer(tenant, question)
    new = write("Acme facturen facturen facturen per post per post")
    forget()

    with django_assert_num_queries(1):
        first = _answer(tenant, question)
    with django_assert_num_queries(2):
        again = _answer(tenant, question)
    forget()
    with django_assert_num_queries(1):
        fresh = _answer(tenant, question)

    assert new.id in {record_id for record_id, _ in first}
    assert first == again == fresh == _exhaustive(tenant, question)


@pytest.mark.parametrize("url", ["", "redis://127.0.0.1:1/0"], ids=["none", "unreachable"])
def test_without_valkey_each_process_reads_its_words_itself(tenant, store, settings, url, django_assert_num_queries):
    """R-5.10: no Valkey, or one that cannot be reached, costs a fresh process its words' query, never an answer."""
    question = "wie stuurt de offerte per post"
    _answer(tenant, question, limit=50)
    settings.REDIS_URL = url
    forget()

    with django_assert_num_queries(2):
        answer = _answer(tenant, question, limit=50)

    assert answer == _exhaustive(tenant, question, limit=50)
