"""A conversation index reads each turn with the turns said just before and after it, in the order
they were said, however fast they reached Core (issue 27 item 7): a conversation loaded through the
API in one go, every turn within the same two minutes, keeps its neighbours."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from core_memory.base.callers import Caller
from memory.models import MemoryRecord
from memory.search import SearchFilters, record_search
from memory.search.question import SearchTrace
from memory.search.ranking import NEIGHBOUR_TURNS, Candidate, candidates_features
from memory.search.scope import said_around
from memory.services.writes import RecordDraft, record_write
from tests.factories import make_index, make_record, resolved_for

pytestmark = pytest.mark.django_db

NOW = timezone.now()
# One conversation, as LoCoMo's: the answer is the turn after the one that names the subject.
TURNS = [
    "Hoi Anna, hoe was je week?",
    "Druk, ik heb een plan gemaakt voor de verhuizing.",
    "Did you go to the pottery class on Saturday?",
    "Yes, I made a bowl!",
    "Wat goed! Ga je nog naar de klimhal?",
    "Nee, daar heb ik geen tijd voor.",
    "Shall we have coffee next week?",
    "Yes, Tuesday suits me.",
    "Great, see you then.",
    "Fun, she likes plants.",
    "Lovely. My sister made a plan for her garden.",
    "Bye!",
]


def _bulk_loaded(tenant, index) -> list:
    """Every turn written through the record service one after another, as a bulk load does."""
    caller = Caller(key=tenant.key, subject="anna", actor="test")
    return [record_write(caller=caller, index=index, draft=RecordDraft(type="fact", text=text)).record for text in TURNS]


def test_each_candidates_neighbours_are_the_turns_said_next_to_it_not_all_written_in_the_same_minutes(tenant):
    index = resolved_for(tenant.key, make_index(tenant.organisation, name="gesprek", conversation=True))
    records = _bulk_loaded(tenant, index)
    assert (records[-1].created_at - records[0].created_at).total_seconds() < 120
    annotated = {
        record.id: record
        for record in MemoryRecord.objects.for_organisation(tenant.organisation.id)
        .filter(index_id=index.pk)
        .annotate(**said_around(key=tenant.key, index=index, turns=NEIGHBOUR_TURNS))
    }

    bowl = annotated[records[3].id]
    assert bowl.said_before == [record.id for record in reversed(records[0:3])]
    assert bowl.said_after == [record.id for record in records[4:8]]
    assert annotated[records[0].id].said_before == []


def test_an_import_with_its_own_times_is_read_in_the_order_they_were_said(tenant):
    index = resolved_for(tenant.key, make_index(tenant.organisation, name="gesprek", conversation=True))
    # Written in another order than said (an import of an older conversation, newest first).
    said = [NOW - timedelta(days=10) + timedelta(seconds=30 * place) for place in range(len(TURNS))]
    records = [make_record(index, text, subject="anna", created_at=at) for text, at in reversed(list(zip(TURNS, said)))]
    records.reverse()
    bowl = (
        MemoryRecord.objects.for_organisation(tenant.organisation.id)
        .annotate(**said_around(key=tenant.key, index=index, turns=1))
        .get(pk=records[3].id)
    )

    assert (bowl.said_before, bowl.said_after) == ([records[2].id], [records[4].id])


def test_features_count_only_the_turns_said_next_to_each_other_when_known():
    said = NOW - timedelta(days=3)
    turn = Candidate("turn", 0.4, 0.80, said, 1.0, 0, "x", "fact", "anna", said_near=frozenset({"next"}))
    following = Candidate("next", 0.0, 0.85, said + timedelta(seconds=1), 1.0, 0, "x", "fact", "anna", said_near=frozenset({"turn"}))
    later = Candidate("later", 0.0, 0.85, said + timedelta(seconds=2), 1.0, 0, "x", "fact", "anna", said_near=frozenset())

    rows = candidates_features([turn, following, later], query="q", windows=[], now=NOW, conversation=True)

    assert rows[1]["neighbour_text"] == 1.0  # said right after the turn
    assert rows[2]["neighbour_text"] == 0.0  # written in the same second, said further on


def test_a_bulk_loaded_conversation_index_lifts_the_answer_that_follows_the_question(tenant, vectors):
    """Issue 27 item 7: loaded in one go, the answer after the turn naming the subject comes before a look-alike said elsewhere."""
    index = resolved_for(tenant.key, make_index(tenant.organisation, name="gesprek", embeddings=True, conversation=True))
    records = _bulk_loaded(tenant, index)
    vectors(*records)

    hits = record_search(
        caller=Caller(key=tenant.key, subject="anna"), index=index, query="What did she make at the pottery class?",
        filters=SearchFilters(limit=5), trace=SearchTrace(),
    )
    found = [record.text for record, _score in hits]

    assert found.index("Yes, I made a bowl!") < found.index("Lovely. My sister made a plan for her garden.")
