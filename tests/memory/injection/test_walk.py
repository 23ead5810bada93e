"""The memory block of a turn, section by section (memory.injection.walk, R-7.5, R-7.7–R-7.10)."""
from __future__ import annotations

from datetime import timedelta

import pytest

from memory.injection.lines import token_estimate
from memory.models import MemoryRecord
from tests.memory.injection.builders import NOW, build, injecting_key, record, sections, store_injection, texts

pytestmark = pytest.mark.django_db


def test_block_for_a_person_has_every_section_in_order_under_its_label(tenant):
    """R-7.5: commitments, behaviour, about_this_person, organisation, past_sessions."""
    store_injection(tenant.index, episodes_limit=3)
    record(tenant.index, "Send Acme the offer", type="commitment", subject="anna")
    record(tenant.index, "Answer in Dutch", type="behaviour", subject="anna")
    record(tenant.index, "Anna lives in Delft", subject="anna")
    record(tenant.index, "Office closes at six")
    record(tenant.index, "Planned the move", type="episode", subject="anna", structured={"thread_id": "thr_1"})

    result = build(injecting_key(tenant))

    assert result.text.split("\n") == [
        "[commitments]",
        '{"type":"commitment","confidence":"100%","text":"Send Acme the offer"}',
        "[behaviour]",
        '{"type":"behaviour","confidence":"100%","text":"Answer in Dutch"}',
        "[about_this_person]",
        '{"type":"fact","confidence":"100%","text":"Anna lives in Delft"}',
        "[organisation]",
        '{"type":"fact","confidence":"100%","text":"Office closes at six"}',
        "[past_sessions]",
        '{"type":"episode","confidence":"100%","thread_id":"thr_1","text":"Planned the move"}',
    ]


@pytest.mark.parametrize("rank", ["confidence", "relevance", "blend"])
def test_another_persons_records_never_appear(tenant, rank):
    """R-7.5, R-12.1: a turn for Anna never shows Bob's records, of any type, whatever the ranking."""
    store_injection(tenant.index, episodes_limit=5, rank=rank)
    for type_name in ("fact", "behaviour", "commitment", "episode", "lesson"):
        record(tenant.index, f"Bob's {type_name} about invoices", type=type_name, subject="bob")
    record(tenant.index, "Anna's fact", subject="anna")

    result = build(injecting_key(tenant), subject="anna", topic="Bob's invoices fact")

    assert "Bob" not in result.text
    assert texts(result.text, "about_this_person") == ["Anna's fact"]
    assert result.trace["injected"] == 1


def test_a_turn_for_nobody_gets_only_shared_records_and_no_behaviour(tenant):
    """R-7.5: shared commitments, organisation and shared episodes; never a person's, never behaviour."""
    store_injection(tenant.index, episodes_limit=5)
    record(tenant.index, "Anna's fact", subject="anna")
    record(tenant.index, "Anna's rule", type="behaviour", subject="anna")
    record(tenant.index, "Anna's session", type="episode", subject="anna")
    record(tenant.index, "Shared rule", type="behaviour")
    record(tenant.index, "Quarterly report", type="commitment")
    record(tenant.index, "Office closes at six")
    record(tenant.index, "Team offsite", type="episode")

    result = build(injecting_key(tenant), subject=None)

    assert list(sections(result.text)) == ["commitments", "organisation", "past_sessions"]
    assert texts(result.text, "commitments") == ["Quarterly report"]
    assert texts(result.text, "organisation") == ["Office closes at six"]
    assert texts(result.text, "past_sessions") == ["Team offsite"]


def test_shared_behaviour_is_never_injected_in_a_turn_for_a_person(tenant):
    """R-7.5 (2)."""
    record(tenant.index, "Shared rule", type="behaviour")
    record(tenant.index, "Her rule", type="behaviour", subject="anna")

    result = build(injecting_key(tenant), subject="anna")

    assert texts(result.text, "behaviour") == ["Her rule"]
    assert "Shared rule" not in result.text


def test_behaviour_is_newest_first_and_at_most_ten(tenant):
    """R-7.5 (2): her own rules, newest first, at most ten, not counted by `limit`."""
    for number in range(12):
        record(tenant.index, f"rule {number}", type="behaviour", subject="anna", created_at=NOW - timedelta(hours=12 - number))

    result = build(injecting_key(tenant, limit=1))

    assert texts(result.text, "behaviour") == [f"rule {number}" for number in range(11, 1, -1)]
    assert result.trace["dropped_by_count"] == 0


def test_commitments_are_open_ones_overdue_first_undated_last_at_most_the_store_limit(tenant):
    """R-7.5 (1) with decision (2): not done; overdue included; soonest due first; undated last."""
    store_injection(tenant.index, commitments={"inject_limit": 3})
    record(tenant.index, "undated", type="commitment", subject="anna")
    record(tenant.index, "next week", type="commitment", subject="anna", due_at=NOW + timedelta(days=7))
    record(tenant.index, "overdue", type="commitment", due_at=NOW - timedelta(days=2))
    record(tenant.index, "tomorrow", type="commitment", subject="anna", due_at=NOW + timedelta(days=1))
    record(tenant.index, "finished", type="commitment", subject="anna", due_at=NOW - timedelta(days=9), done=True)
    record(tenant.index, "Bob's", type="commitment", subject="bob", due_at=NOW - timedelta(days=9))

    key = injecting_key(tenant)
    assert texts(build(key).text, "commitments") == ["overdue", "tomorrow", "next week"]

    store_injection(tenant.index, commitments={"inject_limit": 10})
    assert texts(build(key).text, "commitments") == ["overdue", "tomorrow", "next week", "undated"]


def test_sections_rank_by_effective_confidence_then_retrieval_count_then_id(tenant):
    """R-7.7: decay with the reading key's half-lives decides; retrievals only break ties."""
    decayed = record(tenant.index, "old preference", type="preference", subject="anna", confidence=1.0,
                     changed_at=NOW - timedelta(days=90))
    middle = record(tenant.index, "steady fact", subject="anna", confidence=0.6)
    often = record(tenant.index, "often fetched", subject="anna", confidence=0.9, retrieval_count=5)
    tie_a = record(tenant.index, "tie a", subject="anna", confidence=0.9, retrieval_count=1)
    tie_b = record(tenant.index, "tie b", subject="anna", confidence=0.9, retrieval_count=1)

    result = build(injecting_key(tenant, decay={"preference": 90}))

    first_tie, second_tie = sorted([tie_a, tie_b], key=lambda each: each.id)
    assert texts(result.text, "about_this_person") == [
        often.text, first_tie.text, second_tie.text, middle.text, decayed.text
    ]
    assert sections(result.text)["about_this_person"][-1]["confidence"] == "50%"


def test_min_confidence_filters_every_section_on_the_effective_value(tenant):
    """R-7.5: `min_confidence` on the effective value, in every section."""
    store_injection(tenant.index, episodes_limit=5)
    for type_name in ("commitment", "behaviour", "fact", "episode"):
        record(tenant.index, f"weak {type_name}", type=type_name, subject="anna", confidence=0.4)
        record(tenant.index, f"strong {type_name}", type=type_name, subject="anna", confidence=0.9)
    record(tenant.index, "decayed shared", confidence=0.9, changed_at=NOW - timedelta(days=10))

    result = build(injecting_key(tenant, min_confidence=0.5, decay={"fact": 10}))

    assert "weak" not in result.text
    assert "decayed shared" not in result.text
    assert result.trace["sections"] == {
        "commitments": 1, "behaviour": 1, "about_this_person": 1, "organisation": 0, "past_sessions": 1
    }


def test_metadata_filter_requires_every_pair_in_every_section(tenant):
    """R-7.5: every key/value of the block's `metadata` must match."""
    acme = {"customer": "acme", "team": "sales"}
    record(tenant.index, "acme commitment", type="commitment", subject="anna", metadata=acme)
    record(tenant.index, "acme rule", type="behaviour", subject="anna", metadata={**acme, "extra": 1})
    record(tenant.index, "half match", subject="anna", metadata={"customer": "acme"})
    record(tenant.index, "other customer rule", type="behaviour", subject="anna", metadata={"customer": "globex", "team": "sales"})

    result = build(injecting_key(tenant, metadata={"customer": "acme", "team": "sales"}))

    assert texts(result.text, "commitments") == ["acme commitment"]
    assert texts(result.text, "behaviour") == ["acme rule"]
    assert list(sections(result.text)) == ["commitments", "behaviour"]


def test_lessons_are_her_records_unless_the_block_names_only_other_types(tenant):
    """R-7.8: empty `types` and a `types` naming `lesson` get her lessons; naming only other types not."""
    record(tenant.index, "Check the invoice number first", type="lesson", subject="anna", confidence=0.9)
    record(tenant.index, "Anna lives in Delft", subject="anna")

    assert texts(build(injecting_key(tenant)).text, "about_this_person") == [
        "Anna lives in Delft", "Check the invoice number first"
    ]
    assert texts(build(injecting_key(tenant, types=["lesson"])).text, "about_this_person") == [
        "Check the invoice number first"
    ]
    assert texts(build(injecting_key(tenant, types=["fact"])).text, "about_this_person") == ["Anna lives in Delft"]


def test_episodes_reach_a_block_naming_types_only_when_episode_is_among_them(tenant):
    """R-7.8; also: a block naming types gets only those types' sections."""
    store_injection(tenant.index, episodes_limit=2)
    record(tenant.index, "A session", type="episode", subject="anna")
    record(tenant.index, "A rule", type="behaviour", subject="anna")
    record(tenant.index, "A promise", type="commitment", subject="anna")

    assert list(sections(build(injecting_key(tenant, types=["fact"])).text)) == []
    assert list(sections(build(injecting_key(tenant, types=["episode"])).text)) == ["past_sessions"]
    assert list(sections(build(injecting_key(tenant)).text)) == ["commitments", "behaviour", "past_sessions"]


def test_no_past_sessions_while_the_store_episodes_limit_is_zero(tenant):
    """R-7.5 (5): `episodes_limit` 0 (the default) means no [past_sessions]."""
    record(tenant.index, "A session", type="episode", subject="anna")

    assert build(injecting_key(tenant)).text == ""


def test_past_sessions_are_closest_to_the_topic_recent_ones_higher_at_most_the_limit(tenant):
    """R-7.5 (5)."""
    store_injection(tenant.index, episodes_limit=2)
    record(tenant.index, "Booked a flight to Lisbon", type="episode", subject="anna", created_at=NOW - timedelta(days=200))
    record(tenant.index, "Changed the flight to Lisbon", type="episode", subject="anna", created_at=NOW - timedelta(days=1))
    record(tenant.index, "Talked about the garden", type="episode", subject="anna", created_at=NOW)

    result = build(injecting_key(tenant), topic="flight to Lisbon")

    assert texts(result.text, "past_sessions") == ["Changed the flight to Lisbon", "Booked a flight to Lisbon"]


def test_her_past_session_on_the_topic_is_found_however_many_shared_sessions_match_it_better(tenant):
    """R-7.5 (5): for a person, the sessions closest to the topic are chosen among hers only, so
    shared sessions (never shown to her there) take no place among the topic's hits."""
    store_injection(tenant.index, episodes_limit=1)
    for number in range(5):
        record(tenant.index, f"Talked about the garden, part {number}", type="episode", subject="anna", created_at=NOW)
    record(tenant.index, "Asked once about the flight", type="episode", subject="anna", created_at=NOW - timedelta(days=300))
    for number in range(40):
        record(tenant.index, f"Flight to Lisbon, flight to Lisbon, flight {number}", type="episode")

    result = build(injecting_key(tenant), topic="flight to Lisbon")

    assert texts(result.text, "past_sessions") == ["Asked once about the flight"]


def test_limit_caps_her_and_shared_records_together_and_reports_dropped_by_count(tenant):
    """R-7.8: `limit` counts about_this_person + organisation (not commitments); reaching it stops the walk."""
    record(tenant.index, "promise", type="commitment", subject="anna")
    for number in range(2):
        record(tenant.index, f"hers {number}", subject="anna")
    for number in range(3):
        record(tenant.index, f"shared {number}", confidence=0.5)

    result = build(injecting_key(tenant, limit=3))

    assert result.trace["sections"] == {
        "commitments": 1, "behaviour": 0, "about_this_person": 2, "organisation": 1, "past_sessions": 0
    }
    assert result.trace["dropped_by_count"] == 2
    assert result.trace["dropped_by_budget"] == 0


def test_limit_leaves_behaviour_rules_and_past_sessions_to_their_own_caps(tenant):
    """R-7.8: `limit` does not count behaviour rules or episodes."""
    for number in range(2):
        record(tenant.index, f"rule {number}", type="behaviour", subject="anna")
        record(tenant.index, f"session {number}", type="episode", subject="anna")
        record(tenant.index, f"hers {number}", subject="anna", confidence=0.9 - number / 10)
    store_injection(tenant.index, episodes_limit=2)

    result = build(injecting_key(tenant, limit=1))

    assert {name: len(lines) for name, lines in sections(result.text).items()} == {
        "behaviour": 2, "about_this_person": 1, "past_sessions": 2
    }
    assert result.trace["dropped_by_count"] == 1


def test_reaching_the_count_in_her_section_stops_the_walk_before_the_shared_ones(tenant):
    """R-7.8: the walk stops; every candidate left, hers and shared, is dropped_by_count."""
    for number in range(3):
        record(tenant.index, f"hers {number}", subject="anna", confidence=0.9 - number / 10)
    for number in range(2):
        record(tenant.index, f"shared {number}")

    result = build(injecting_key(tenant, limit=1))

    assert texts(result.text, "about_this_person") == ["hers 0"]
    assert list(sections(result.text)) == ["about_this_person"]
    assert result.trace["dropped_by_count"] == 4
    assert result.detail["dropped_by_count"] == {"about_this_person": 2, "organisation": 2}  # counted per section, not read


def test_a_record_that_does_not_fit_the_budget_is_skipped_and_the_next_one_tried(tenant):
    """R-7.8: the budget skips, the walk goes on; estimated_tokens stays within the budget."""
    record(tenant.index, "x" * 400, subject="anna", confidence=0.9)
    record(tenant.index, "short one", subject="anna", confidence=0.8)
    record(tenant.index, "short two", subject="anna", confidence=0.7)

    result = build(injecting_key(tenant, token_budget=40))

    assert texts(result.text, "about_this_person") == ["short one", "short two"]
    assert result.trace["dropped_by_budget"] == 1
    assert result.trace["dropped_by_count"] == 0
    assert result.trace["estimated_tokens"] == token_estimate(text=result.text) == 32  # within the budget of 40


def test_shared_records_use_at_most_the_organisation_share_of_the_budget_for_a_person(tenant):
    """R-7.8, R-4.3: at most 40% of the budget for shared records in a turn for a person; all of it for nobody."""
    for number in range(20):
        record(tenant.index, f"shared fact {number:02}")
    line_bytes = len('{"type":"fact","confidence":"100%","text":"shared fact 00"}')
    key = injecting_key(tenant, token_budget=200)

    for_anna = build(key, subject="anna")
    assert for_anna.trace["sections"]["organisation"] == (80 * 4) // line_bytes
    assert for_anna.trace["dropped_by_budget"] == 20 - (80 * 4) // line_bytes

    for_nobody = build(key, subject=None)
    assert for_nobody.trace["sections"]["organisation"] == (200 * 4 - len("[organisation]")) // (line_bytes + 1)

    store_injection(tenant.index, organisation_share=0.1)
    assert build(key, subject="anna").trace["sections"]["organisation"] == (20 * 4) // line_bytes


def test_building_the_block_only_reads(tenant):
    """The block names the records it holds; counting them (R-7.10) is the turn's write
    (tests/core_memory/flows/turns/test_responses.py), so building a block for a preview changes nothing."""
    injected = record(tenant.index, "in", subject="anna", confidence=0.9)
    record(tenant.index, "out", subject="anna", confidence=0.1)

    result = build(injecting_key(tenant, limit=1))

    assert result.record_ids == [injected.id]
    assert set(MemoryRecord.objects.unscoped().values_list("retrieval_count", flat=True)) == {0}


def test_trace_reports_source_index_sections_drops_and_tokens(tenant):
    """R-7.9."""
    record(tenant.index, "Anna lives in Delft", subject="anna")

    result = build(injecting_key(tenant))

    assert result.trace == {
        "source": "key",
        "index_id": tenant.index.id,
        "injected": 1,
        "sections": {"commitments": 0, "behaviour": 0, "about_this_person": 1, "organisation": 0, "past_sessions": 0},
        "dropped_by_count": 0,
        "dropped_by_budget": 0,
        "estimated_tokens": token_estimate(text=result.text),
    }
    assert result.trace["estimated_tokens"] == -(-len(result.text.encode()) // 4)


def test_rank_relevance_puts_records_close_to_the_topic_first(tenant):
    """R-7.7: `rank: relevance` orders by closeness to the turn's topic instead of confidence."""
    record(tenant.index, "Anna likes long walks", subject="anna", confidence=1.0)
    record(tenant.index, "Anna wants invoices by e-mail", subject="anna", confidence=0.3)
    store_injection(tenant.index, rank="relevance")

    result = build(injecting_key(tenant), topic="send the invoices")

    assert texts(result.text, "about_this_person") == ["Anna wants invoices by e-mail", "Anna likes long walks"]
    store_injection(tenant.index, rank="confidence")
    assert texts(build(injecting_key(tenant), topic="send the invoices").text, "about_this_person") == [
        "Anna likes long walks", "Anna wants invoices by e-mail"
    ]


def test_rank_blend_mixes_topic_and_confidence(tenant):
    """R-7.7: `blend` — a close record with fair confidence beats a distant confident one; a weak close one does not."""
    record(tenant.index, "Anna likes long walks", subject="anna", confidence=0.9)
    record(tenant.index, "Anna wants invoices by e-mail", subject="anna", confidence=0.6)
    record(tenant.index, "Anna once asked about invoices", subject="anna", confidence=0.05)
    store_injection(tenant.index, rank="blend")

    result = build(injecting_key(tenant), topic="invoices by e-mail")

    assert texts(result.text, "about_this_person") == [
        "Anna wants invoices by e-mail", "Anna likes long walks", "Anna once asked about invoices"
    ]


@pytest.mark.parametrize("rank", ["confidence", "blend"])
def test_building_the_block_costs_no_more_queries_for_2000_records_than_for_20(tenant, django_assert_num_queries, rank):
    """R-12.5: a small bounded number of queries whatever the store's size."""
    store_injection(tenant.index, episodes_limit=3, rank=rank)
    key = injecting_key(tenant, limit=5, token_budget=400)
    type_cycle = ("fact", "preference", "behaviour", "commitment", "episode", "lesson")

    def fill(count: int, start: int) -> None:
        MemoryRecord.objects.bulk_create(
            MemoryRecord(
                organisation_id=tenant.organisation.id, index=tenant.index, subject=("anna", None, "bob")[number % 3],
                type=type_cycle[number % 6], text=f"record {number} about invoices", normalised_text=f"record {number}",
                confidence=0.5 + (number % 50) / 100, changed_at=NOW,
            )
            for number in range(start, start + count)
        )

    # The index, every section's first page in one statement (past sessions' too: the topic's search
    # reads her episodes' rows), the episodes' topic candidates, and what limit left out counted.
    # `blend` reads the topic's hits (the candidates, one query) and its sections' pools besides: in
    # the small store her page is not full, so the shared section's pool is read too.
    small, large = {"confidence": (4, 4), "blend": (7, 6)}[rank]

    fill(20, 0)
    build(key, topic="invoices")  # the topic's words are looked up once per process
    with django_assert_num_queries(small):
        build(key, topic="invoices")
    fill(1980, 20)
    with django_assert_num_queries(large):
        result = build(key, topic="invoices")
    assert result.trace["sections"] == {
        "commitments": 5, "behaviour": 0, "about_this_person": 5, "organisation": 0, "past_sessions": 0
    }


# --- what the walk did, kept for the console (InjectionResult.detail) ----------------------------------


def test_the_detail_names_each_injected_record_with_its_section_in_block_order(tenant):
    """Issue 13 item 6: which records went into which section."""
    promise = record(tenant.index, "Send Acme the offer", type="commitment", subject="anna")
    hers = record(tenant.index, "Anna lives in Delft", subject="anna")
    shared = record(tenant.index, "Office closes at six")

    result = build(injecting_key(tenant))

    assert result.detail == {
        "injected": [[promise.id, "commitments"], [hers.id, "about_this_person"], [shared.id, "organisation"]],
        "dropped": [],
        "dropped_by_count": {},
    }


def test_the_detail_names_records_skipped_for_the_budget_and_for_the_share(tenant):
    """R-7.8: a record too big for the budget is "budget"; a shared one past the organisation's share is "share"."""
    too_big = record(tenant.index, "x" * 400, subject="anna", confidence=0.9)
    fits = record(tenant.index, "short one", subject="anna", confidence=0.8)
    shared = record(tenant.index, "y" * 60, confidence=0.7)

    result = build(injecting_key(tenant, token_budget=60))

    assert result.detail["injected"] == [[fits.id, "about_this_person"]]
    assert result.detail["dropped"] == [[too_big.id, "about_this_person", "budget"], [shared.id, "organisation", "share"]]
    assert result.trace["dropped_by_budget"] == 2
