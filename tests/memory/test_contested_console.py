"""A contested pair in the console (memory.admin.contested, issue 32): the two records side by side,
and the administrator's decision — not a contradiction, or one replaces the other — through the
record services, versioned and audited; another organisation's pair is a 404."""
from __future__ import annotations

import pytest
from django.contrib.admin.utils import quote

from audit.models import AuditEvent
from memory.models import MemoryRecord
from tests.core_memory.console.world import contest

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_password_hashing")]


def pair_url(record: MemoryRecord, other: MemoryRecord) -> str:
    return f"/console/memory/memoryrecord/{quote(record.id)}/contested/{quote(other.id)}/"


@pytest.fixture
def pair(write):
    coffee = write("Anna drinkt koffie zwart", subject="anna", type="preference")
    tea = write("Anna drinkt alleen thee", subject="anna", type="preference")
    contest(coffee, tea)
    return coffee, tea


def test_the_pair_is_shown_side_by_side_and_the_read_audited(console, pair):
    coffee, tea = pair

    response = console.get(pair_url(coffee, tea))

    page = response.content.decode()
    assert response.status_code == 200
    assert page.index("Anna drinkt koffie zwart") < page.index("Anna drinkt alleen thee")
    event = AuditEvent.objects.filter(action="memory.console_read").latest("id")
    assert (event.details["page"], event.details["record_ids"]) == ("contested", [coffee.id, tea.id])


def test_the_list_badge_leads_to_the_pair(console, pair):
    coffee, tea = pair

    page = console.get("/console/memory/memoryrecord/").content.decode()

    assert f'href="{pair_url(coffee, tea)}"' in page


def test_not_a_contradiction_unmarks_both_versioned_and_audited(console, pair):
    coffee, tea = pair

    response = console.post(pair_url(coffee, tea), {"decision": "not_contradicting"})

    assert response.status_code == 302
    for record in (coffee, tea):
        stored = MemoryRecord.objects.get(pk=record.pk)
        assert (stored.contested, stored.status, list(stored.contradicts.all())) == (False, "active", [])
    assert MemoryRecord.history.filter(id=coffee.id).latest("history_date").history_change_reason.startswith(f"not contradicting {tea.id}")
    event = AuditEvent.objects.get(action="memory.contradiction_dismissed")
    assert (event.actor, event.details["record_ids"]) == ("console:anna", [coffee.id, tea.id])


def test_keeping_one_ends_the_other_replaced_by_it_and_audited(console, pair):
    coffee, tea = pair

    console.post(pair_url(coffee, tea), {"decision": tea.id})

    ended, kept = MemoryRecord.objects.get(pk=coffee.pk), MemoryRecord.objects.get(pk=tea.pk)
    assert (ended.status, ended.replaced_by_id, ended.contested) == ("ended", tea.id, False)
    assert (kept.status, kept.contested) == ("active", False)
    event = AuditEvent.objects.get(action="memory.replaced")
    assert (event.target, event.details) == (coffee.id, {"replaced_by": tea.id})


def test_a_decision_other_than_the_pairs_is_refused_and_nothing_changes(console, pair, write):
    coffee, tea = pair
    stranger = write("Iets anders", subject="anna")

    response = console.post(pair_url(coffee, tea), {"decision": stranger.id})

    assert response.status_code == 403
    assert MemoryRecord.objects.get(pk=coffee.pk).contested and MemoryRecord.objects.get(pk=tea.pk).contested


def test_another_organisations_pair_is_a_404_and_nothing_changes(console, other_write):
    first, second = other_write("Bert drinkt koffie"), other_write("Bert drinkt thee")
    contest(first, second)

    assert console.get(pair_url(first, second)).status_code == 404
    assert console.post(pair_url(first, second), {"decision": "not_contradicting"}).status_code == 404
    assert MemoryRecord.objects.get(pk=first.pk).contested


def test_two_records_that_are_no_pair_have_no_pair_page(console, write):
    first, second = write("Een", subject="anna"), write("Twee", subject="anna")

    assert console.get(pair_url(first, second)).status_code == 404
