"""Search (R-5.10): full text over Dutch and English, OR semantics, ranked."""
from datetime import timedelta

import pytest
from django.utils import timezone

from memory.models import MemoryRecord
from memory.search import text_query, tsquery_text

pytestmark = pytest.mark.django_db


@pytest.fixture
def corpus(write):
    return {
        "acme_invoices": write("Acme wil facturen per e-mail ontvangen", subject="anna"),
        "bolt_invoices": write("Bolt wil de factuur per post"),
        "acme_meetings": write("Acme prefers meetings in the morning", type="preference"),
        "english_invoices": write("Globex wants its invoices as PDF attachments"),
        "coffee": write("Jan drinkt graag koffie zonder suiker", type="preference", subject="jan"),
    }


def _search(client, index, **body):
    response = client.post("/v1/memory/search", {"index_id": index.id, **body}, format="json")
    assert response.status_code == 200, response.content
    return response.json()["data"]


def test_a_dutch_question_finds_the_record_with_some_of_its_words_first(tenant, corpus):
    """R-5.10: "hoe wil Acme de facturen" finds "Acme wil facturen per e-mail"."""
    hits = _search(tenant.client(), tenant.index, query="hoe wil Acme de facturen")

    # Sharing only some words makes a candidate (OR), ranked below the better match. Full text
    # alone: the learned fusion's full-text weights over ts_rank_cd (0.2857, 0.1667, 0.0909),
    # the name "Acme" both Acme records hold, the type the question asks for ("wil": a
    # preference) and the recency of a new record (memory.search.ranking, .weights), then the
    # second look: the question's words each record holds, "facturen" meeting "factuur"
    # (memory.search.rerank).
    assert [hit["id"] for hit in hits] == [corpus["acme_invoices"].id, corpus["acme_meetings"].id, corpus["bolt_invoices"].id]
    assert [hit["score"] for hit in hits] == [0.124, 0.0726, 0.0034]


def test_an_english_question_finds_english_inflections(tenant, corpus):
    """R-5.10: "how does Globex want its invoices" → "Globex wants its invoices as PDF"."""
    hits = _search(tenant.client(), tenant.index, query="How does Globex want its invoice?")
    assert [hit["id"] for hit in hits] == [corpus["english_invoices"].id]


def test_stop_words_of_either_language_do_not_make_candidates(tenant, corpus):
    """"de" and "the" alone would match half the corpus; they carry no meaning."""
    assert _search(tenant.client(), tenant.index, query="de the in") == []


def test_search_hits_carry_the_record_shape_plus_score(tenant, corpus):
    """R-5.6: search hits use the record shape plus `score`."""
    hit = _search(tenant.client(), tenant.index, query="koffie")[0]
    from tests.memory.test_read import RECORD_FIELDS

    assert set(hit) == RECORD_FIELDS | {"score"}
    assert hit["score"] == 0.0326


def test_search_is_scoped_like_the_list(tenant, corpus):
    """R-5.10 "with the same scoping as R-5.6": a person sees hers and the shared ones."""
    found_by_anna = [hit["id"] for hit in _search(tenant.client(subject="anna"), tenant.index, query="koffie facturen")]
    assert found_by_anna == [corpus["acme_invoices"].id, corpus["bolt_invoices"].id]


def test_types_limit_after_and_before(tenant, corpus):
    """R-5.10 filters; `limit` default 10, max 50."""
    client = tenant.client()
    assert [hit["id"] for hit in _search(client, tenant.index, query="acme", types=["preference"])] == [corpus["acme_meetings"].id]
    assert [hit["id"] for hit in _search(client, tenant.index, query="acme facturen", limit=1)] == [corpus["acme_invoices"].id]
    MemoryRecord.objects.filter(pk=corpus["acme_invoices"].pk).update(created_at=timezone.now() - timedelta(days=10))
    cut = (timezone.now() - timedelta(days=5)).isoformat()
    assert [hit["id"] for hit in _search(client, tenant.index, query="acme", before=cut)] == [corpus["acme_invoices"].id]
    assert [hit["id"] for hit in _search(client, tenant.index, query="acme", after=cut)] == [corpus["acme_meetings"].id]


@pytest.mark.parametrize("field", ["after", "before"])
def test_a_time_without_an_offset_is_a_400_on_that_field(tenant, corpus, field):
    """R-5.10."""
    response = tenant.client().post(
        "/v1/memory/search", {"index_id": tenant.index.id, "query": "acme", field: "2026-11-30T10:00:00"}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["error"]["param"] == field


@pytest.mark.parametrize("limit", [0, 51])
def test_limit_out_of_range_is_a_400(tenant, limit):
    response = tenant.client().post("/v1/memory/search", {"index_id": tenant.index.id, "query": "x", "limit": limit}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "limit"


def test_each_hit_raises_its_retrieval_count(tenant, corpus):
    """R-5.10."""
    hits = _search(tenant.client(), tenant.index, query="koffie")

    assert [hit["retrieval_count"] for hit in hits] == [1]
    counts = dict(MemoryRecord.objects.values_list("id", "retrieval_count"))
    assert counts[corpus["coffee"].id] == 1
    assert sum(counts.values()) == 1
    assert corpus["coffee"].history.count() == 1  # a retrieval is not a new version


@pytest.mark.django_db(transaction=True)
def test_the_hits_are_counted_in_one_statement_whose_commit_alone_does_not_wait_for_the_disk(tenant, corpus):
    """R-5.10; docs/decisions.md "Commits": the count commits on its own, its wait for the log
    flush off for that commit only."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from core_memory.base.callers import Caller
    from memory.services.retrievals import records_retrieved

    coffee = corpus["coffee"]
    with CaptureQueriesContext(connection) as statements:
        records_retrieved(caller=Caller(key=tenant.key, subject="jan"), records=[coffee])

    assert [statement["sql"].split()[0] for statement in statements] == ["UPDATE"]
    assert "set_config('synchronous_commit', 'off', true)" in statements[0]["sql"]
    assert coffee.retrieval_count == 1
    assert MemoryRecord.objects.get(pk=coffee.pk).retrieval_count == 1
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        assert cursor.fetchone()[0] == "on"


def test_equal_relevance_ties_go_to_the_higher_effective_confidence_then_retrievals(tenant, write):
    """Decision 5: ties by effective confidence, retrieval count, id."""
    low = write("Acme factuur", confidence=0.5)
    high = write("Acme factuur!", type="preference", confidence=0.9)
    popular = write("Acme factuur", type="behaviour", confidence=0.5)
    MemoryRecord.objects.filter(pk=popular.pk).update(retrieval_count=7)

    hits = _search(tenant.client(), tenant.index, query="acme factuur")

    assert [hit["id"] for hit in hits] == [high.id, popular.id, low.id]


def test_or_query_is_built_from_the_dutch_and_english_lexemes(tenant):
    """Each meaningful word is the OR of its Dutch and English lexemes, a long one also as a
    prefix; the stop words of the query's language are dropped."""
    assert tsquery_text("hoe wil Acme de facturen") == "('acm') | ('factur':* | 'facturen':*)"
    assert tsquery_text("Acme facturen", match_all=True) == "('acm') & ('factur':* | 'facturen':*)"
    assert tsquery_text("!!!") is None
    assert text_query("de the") is None


def test_a_word_that_is_a_stop_word_only_in_the_other_language_counts(tenant, write):
    """"want" and "ben" are Dutch stop words, but words that matter in an English question;
    "wil" (Dutch for "wants") is kept in nothing but a Dutch one."""
    assert tsquery_text("How does Globex want its invoice?") == "('globex':*) | ('want') | ('invoic':*)"
    assert tsquery_text("What did Ben do?") == "('ben')"
    globex = write("Globex wants its invoices as PDF attachments")
    write("Globex has its office in Delft")

    assert [hit["id"] for hit in _search(tenant.client(), tenant.index, query="What does Globex want?")][0] == globex.id



@pytest.mark.parametrize("person", [None, "anna"], ids=["the key", "her person"])
def test_a_search_hit_is_the_record_as_every_record_route_answers_it_plus_its_score(tenant, write, person):
    """R-5.6: a hit is the record shape — every field as the record's own route answers it, here
    with each optional field set (a person, metadata, a due date, an expiry, structured fields,
    the record it replaced, a confirmation, provenance) — plus `score`; asked as her person, the
    search's own statement (memory.search.hot) reads it."""
    old = write("Acme factuur per post", type="commitment", subject="anna")
    record = write(
        "Acme factuur per e-mail", type="commitment", subject="anna", metadata={"bron": "mail", "n": 2}, structured={"kanaal": "e-mail"},
        due_at=timezone.now() + timedelta(days=3), expires_at=timezone.now() + timedelta(days=30), replaces=old.id,
    )
    write("Acme factuur per e-mail", type="commitment", subject="anna")  # confirms it
    MemoryRecord.objects.filter(pk=record.pk).update(thread_id="thr_1", item_ids=["itm_1", "itm_2"], response_id="resp_1")
    client = tenant.client(subject=person) if person else tenant.client()

    hit = _search(client, tenant.index, query="factuur e-mail")[0]
    shown = client.get(f"/v1/memory/{record.id}", format="json").json()

    assert hit.pop("score") > 0
    assert hit == shown
    assert hit["replaces"] == old.id and hit["structured"] == {"kanaal": "e-mail"} and hit["last_confirmed_at"] is not None


def test_a_record_answered_directly_reads_its_times_in_the_current_zone_as_the_serializer_does(tenant, write):
    """The search's direct answer (memory.answers.record_answer) and the record routes' serializer
    agree in any current time zone, not only in UTC."""
    from memory.answers import record_answer
    from memory.apis import RecordOutputSerializer
    from memory.search.decay import records_with_decay

    write("Acme factuur", type="commitment", due_at=timezone.now() + timedelta(days=1))
    record = records_with_decay(MemoryRecord.objects.all(), key=tenant.key).get()
    for zone in ("UTC", "Europe/Amsterdam", "America/St_Johns"):
        with timezone.override(zone):
            assert record_answer(record) == RecordOutputSerializer(record).data

def test_a_long_word_also_finds_the_words_it_begins(tenant, write):
    """Dutch writes compounds as one word: "factuur" finds "factuuradres"."""
    record = write("Het factuuradres van Acme is veranderd")

    assert [hit["id"] for hit in _search(tenant.client(), tenant.index, query="factuur")] == [record.id]


@pytest.mark.parametrize("limit", [5, 50])
def test_search_takes_the_same_number_of_queries_for_any_limit(tenant, write, django_assert_num_queries, limit):
    """No per-hit queries (style: N+1)."""
    for number in range(60):
        write(f"Acme factuur nummer {number}", subject="anna" if number % 2 else None)
    client = tenant.client()
    _search(client, tenant.index, query="acme facturen", limit=1)  # the index and the words, read once per process
    # The credential, the candidates with their scores, and the retrieval counts (one statement).
    with django_assert_num_queries(3):
        hits = _search(client, tenant.index, query="acme facturen", limit=limit)
    assert len(hits) == limit
