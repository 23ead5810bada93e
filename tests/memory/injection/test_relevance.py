"""Relevance in the block (R-7.5, R-7.7, issue 10): closeness to the turn's topic by full text and,
where the index embeds, by meaning (the real model); lessons closest to the topic first."""
from __future__ import annotations

from datetime import timedelta

import pytest

from core_memory.base.callers import Caller
from memory.injection.walk import injection_block_build
from tests.memory.injection.builders import NOW, build, injecting_key, record, store_injection, texts

pytestmark = pytest.mark.django_db


def _embedded(index, embed, text: str, **fields):
    made = record(index, text, **fields)
    embed(made)
    return made


def test_rank_relevance_finds_the_record_closest_in_meaning_without_a_shared_word(tenant, embedding_index, vectors):
    """R-7.7 with embeddings: "her cats" brings "Heeft twee katten …" first, before a more confident record."""
    _embedded(embedding_index, vectors, "Anna werkt bij een bank.", subject="anna", confidence=1.0)
    _embedded(embedding_index, vectors, "Heeft twee katten, Minnie en Moos.", subject="anna", confidence=0.4)
    _embedded(embedding_index, vectors, "Zijn broer woont in Amsterdam.", subject="anna", confidence=0.9)
    store_injection(embedding_index, rank="relevance")
    key = injecting_key(tenant, index_id=embedding_index.id)

    result = build(key, topic="What are the names of her cats?")

    assert texts(result.text, "about_this_person")[0] == "Heeft twee katten, Minnie en Moos."


def test_blend_is_half_closeness_relative_to_the_best_hit_and_half_effective_confidence(tenant):
    """docs/decisions.md: blend = 0.5 × relevance / best relevance + 0.5 × effective confidence."""
    record(tenant.index, "Anna wants invoices by e-mail", subject="anna", confidence=0.2)  # 0.5 + 0.1 = 0.6
    record(tenant.index, "Anna likes long walks", subject="anna", confidence=1.0)  # 0 + 0.5 = 0.5
    record(tenant.index, "Anna asked about invoices", subject="anna", confidence=0.5)  # 0.5 × r + 0.25, r a fraction of the best
    store_injection(tenant.index, rank="blend")

    result = build(injecting_key(tenant), topic="invoices by e-mail")

    # One of the topic's words scores far below all of them (the learned score is a chance,
    # memory.search.ranking): r is small, and 0.25 + 0.5 × r stays under the walk's 0.5.
    assert texts(result.text, "about_this_person") == [
        "Anna wants invoices by e-mail", "Anna likes long walks", "Anna asked about invoices"
    ]


def test_lessons_keep_their_places_but_the_closest_to_the_topic_comes_first(tenant):
    """Issue 10: under `rank: confidence` her records stay in confidence order; the places lessons
    take go to the lessons closest to the turn's topic."""
    record(tenant.index, "Anna lives in Delft", subject="anna", confidence=1.0)
    record(tenant.index, "Confirm flight times with the traveller", type="lesson", subject="anna", confidence=0.95)
    record(tenant.index, "Anna prefers mornings", subject="anna", confidence=0.92)
    record(tenant.index, "Check the invoice number before sending", type="lesson", subject="anna", confidence=0.9)
    key = injecting_key(tenant)

    about_invoices = build(key, topic="send the invoice to Acme")
    no_topic = build(key, topic="")

    assert texts(about_invoices.text, "about_this_person") == [
        "Anna lives in Delft", "Check the invoice number before sending", "Anna prefers mornings", "Confirm flight times with the traveller"
    ]
    assert texts(no_topic.text, "about_this_person") == [
        "Anna lives in Delft", "Confirm flight times with the traveller", "Anna prefers mornings", "Check the invoice number before sending"
    ]


def test_lessons_closest_first_still_obey_the_limit_and_the_block_filters(tenant):
    record(tenant.index, "Anna lives in Delft", subject="anna", confidence=1.0)
    record(tenant.index, "Confirm flight times", type="lesson", subject="anna", confidence=0.95)
    record(tenant.index, "Check the invoice number", type="lesson", subject="anna", confidence=0.9, metadata={"lesson.kind": "pitfall"})
    record(tenant.index, "Bob: check the invoice twice", type="lesson", subject="bob", confidence=0.99)

    limited = build(injecting_key(tenant, limit=2), topic="invoice")
    filtered = build(injecting_key(tenant, metadata={"lesson.kind": "pitfall"}), topic="flight")

    assert texts(limited.text, "about_this_person") == ["Anna lives in Delft", "Check the invoice number"]
    assert texts(filtered.text, "about_this_person") == ["Check the invoice number"]


def test_past_sessions_closest_in_meaning_come_first(tenant, embedding_index, vectors):
    """R-7.5 (5) with embeddings: the episode about the topic, though it shares no word with it
    and a more recent one does not match."""
    store_injection(embedding_index, episodes_limit=1)
    _embedded(embedding_index, vectors, "Heeft de verwarming laten repareren.", type="episode", subject="anna", created_at=NOW - timedelta(days=3))
    _embedded(embedding_index, vectors, "Zocht een nieuwe laptop uit voor haar werk.", type="episode", subject="anna", created_at=NOW - timedelta(days=40))
    key = injecting_key(tenant, index_id=embedding_index.id)

    result = injection_block_build(caller=Caller(key=key, subject="anna"), agent_version=None, topic="What computer did she choose?", now=NOW)

    assert texts(result.text, "past_sessions") == ["Zocht een nieuwe laptop uit voor haar werk."]


def test_lessons_closest_first_cost_no_more_queries_for_2000_records_than_for_20(tenant, django_assert_num_queries):
    """R-12.5: the lessons' topic search and one page of her lessons, whatever her store's size."""
    from memory.models import MemoryRecord

    key = injecting_key(tenant, limit=5, token_budget=400)
    # The block's index, its sections' first pages (her lessons' among them) in one statement,
    # the lessons' topic candidates, and what limit left out counted.
    queries = 4

    def fill(count: int, start: int) -> None:
        MemoryRecord.objects.bulk_create(
            MemoryRecord(
                organisation_id=tenant.organisation.id, index=tenant.index, subject="anna", type=("fact", "lesson")[number % 2],
                text=f"record {number} about invoices", normalised_text=f"record {number}", confidence=0.5 + (number % 50) / 100,
                changed_at=NOW,
            )
            for number in range(start, start + count)
        )

    fill(20, 0)
    build(key, topic="invoices")  # the topic's words are looked up once per process
    with django_assert_num_queries(queries):
        build(key, topic="invoices")
    fill(1980, 20)
    with django_assert_num_queries(queries):
        result = build(key, topic="invoices")
    assert result.trace["sections"]["about_this_person"] == 5
