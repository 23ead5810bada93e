"""The selectors other apps build on (docs/contracts.md): scoping and search without the API."""
import pytest

from core_memory.base.errors import ImproperlyScoped
from memory.models import MemoryRecord
from core_memory.base.callers import Caller
from memory.search import SearchFilters, record_search
from memory.search.scope import records_visible
from stores.models import KnowledgeIndex

pytestmark = pytest.mark.django_db


@pytest.fixture
def records(write):
    annas = write("Anna wil facturen per e-mail", subject="anna")
    shared = write("Facturen gaan per e-mail")
    brams = write("Bram wil facturen per post", subject="bram")
    ended = write("Facturen per fax", subject="anna")
    write("Facturen per brief", subject="anna", replaces=ended.id)
    return {"anna": annas, "shared": shared, "bram": brams, "ended": ended}


def test_records_visible_to_a_person_are_her_active_ones_and_the_shared_ones(tenant, records):
    visible = set(records_visible(caller=Caller(key=tenant.key, subject="anna"), index=tenant.index).values_list("text", flat=True))
    assert visible == {"Anna wil facturen per e-mail", "Facturen gaan per e-mail", "Facturen per brief"}


def test_records_visible_to_nobody_are_only_the_shared_ones(tenant, records):
    assert list(records_visible(caller=Caller(key=tenant.key), index=tenant.index)) == [records["shared"]]


def test_search_for_nobody_finds_only_shared_records_unless_all_subjects(tenant, records):
    shared_only = record_search(caller=Caller(key=tenant.key), index=tenant.index, query="facturen")
    everyone = record_search(caller=Caller(key=tenant.key), index=tenant.index, query="facturen", filters=SearchFilters(all_subjects=True))

    assert [record.id for record, _ in shared_only] == [records["shared"].id]
    # The same words: the learned fusion puts the shorter record first (by full text a long
    # record holds a word by chance), then ties go by id; the ended record is no hit.
    assert [record.text for record, _ in everyone] == [
        "Facturen per brief", "Facturen gaan per e-mail", "Anna wil facturen per e-mail", "Bram wil facturen per post"
    ]


def test_search_itself_only_reads(tenant, records):
    """Counting the hits (R-5.10) is memory.retrieval's, which reads through the search and then counts."""
    hits = record_search(caller=Caller(key=tenant.key, subject="anna"), index=tenant.index, query="facturen")

    assert [record.text for record, _ in hits] == ["Facturen per brief", "Facturen gaan per e-mail", "Anna wil facturen per e-mail"]
    assert set(MemoryRecord.objects.unscoped().values_list("retrieval_count", flat=True)) == {0}


def test_record_selectors_refuse_an_index_not_read_for_the_key(tenant, other_tenant, records):
    """Tenancy in the structure: an index handed in must come from KnowledgeIndex.objects.for_key
    for the same key, or the selector stops (a bug, never a quiet read of another's records)."""
    with pytest.raises(ImproperlyScoped):
        records_visible(caller=Caller(key=other_tenant.key), index=tenant.index)
    with pytest.raises(ImproperlyScoped):
        records_visible(caller=Caller(key=tenant.key), index=KnowledgeIndex.objects.unscoped().get(pk=tenant.index.pk))


def test_search_scores_are_best_first_between_zero_and_one(tenant, records):
    hits = record_search(caller=Caller(key=tenant.key, subject="anna"), index=tenant.index, query="anna facturen e-mail")
    # Cover density normalised as rank / (rank + 1): 0.8 → 4/9, 0.6 → 3/8, 0.2 → 1/6, read by
    # the learned fusion (memory.search.ranking, tests/memory/search/test_ranking.py pins it).
    assert [record.text for record, _ in hits] == ["Anna wil facturen per e-mail", "Facturen gaan per e-mail", "Facturen per brief"]
    scores = [score for _, score in hits]
    assert scores == sorted(scores, reverse=True)
    assert all(0.0 < score < 1.0 for score in scores)


