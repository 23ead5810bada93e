"""The block reads its sections' first pages in one statement (memory.injection.pages), for the
most frequent block written once in SQL (memory.injection.hot), and the pools of the sections
ranked by the topic from the search's own hits: the block is the same, line for line, with the
same trace and detail, as when each section reads its own pages."""
from __future__ import annotations

import random
from datetime import timedelta

import pytest

from memory.injection import walk
from memory.models import MemoryRecord
from tests.memory.injection.builders import NOW, build, injecting_key, record, store_injection

pytestmark = pytest.mark.django_db

WORDS = ["invoices", "Acme", "facturen", "koffie", "move", "Delft", "offer", "laptop", "contract", "e-mail"]
TYPES = ["fact", "preference", "commitment", "behaviour", "episode", "lesson"]
TOPICS = ["", "Acme invoices", "koffie in Delft", "the laptop offer", "nothing matches this"]


@pytest.fixture
def varied(tenant):
    """Three persons' records and shared ones, of every type, over two months: open and done
    commitments with and without a due date, episodes with their span, lessons, contested ones,
    and the ones no block shows (deleted, ended, expired)."""
    generator = random.Random(7)
    for number in range(160):
        type_name = TYPES[number % len(TYPES)]
        fields = {
            "type": type_name,
            "subject": ("anna", None, "bram", "anna")[number % 4],
            "confidence": round(generator.uniform(0.3, 1.0), 2),
            "contested": number % 11 == 0,
            "metadata": {"team": ("sales", "support")[number % 2]},
        }
        if type_name == "commitment":
            fields["done"] = number % 5 == 0
            if number % 3:
                fields["due_at"] = NOW + timedelta(days=generator.randint(-5, 30))
        if type_name == "episode":
            fields["structured"] = {"thread_id": f"thr_{number}", "from": "2026-01-01"}
        made = record(tenant.index, " ".join(generator.sample(WORDS, 4)) + f" {number}", **fields)
        changes = {"created_at": NOW - timedelta(days=generator.randint(0, 60)), "retrieval_count": generator.randint(0, 3)}
        if number % 17 == 0:
            changes["status"] = MemoryRecord.Status.DELETED
        elif number % 19 == 0:
            changes["status"] = MemoryRecord.Status.ENDED
        elif number % 23 == 0:
            changes["expires_at"] = NOW - timedelta(hours=1)
        MemoryRecord.objects.filter(pk=made.pk).update(**changes)


def _block(key, *, subject, topic, together: bool, written: bool, monkeypatch) -> tuple:
    monkeypatch.setattr(walk, "FIRST_PAGES_TOGETHER", together)
    monkeypatch.setattr(walk, "FIRST_PAGES_WRITTEN", written)
    result = build(key, subject=subject, topic=topic)
    return result.text, result.trace, result.detail, result.record_ids


BLOCKS = [
    ({"episodes_limit": 3}, {}),
    ({"episodes_limit": 2, "rank": "blend"}, {"limit": 4, "token_budget": 300}),
    ({"episodes_limit": 0, "rank": "relevance"}, {"limit": 30}),
    ({"episodes_limit": 5, "organisation_share": 0.2}, {"limit": 3, "token_budget": 120}),
    ({"episodes_limit": 3}, {"types": ["fact", "lesson", "episode", "commitment"]}),
    ({"episodes_limit": 3}, {"metadata": {"team": "sales"}, "min_confidence": 0.5}),
    ({"episodes_limit": 3}, {"decay": {"fact": 10.0, "episode": 3.0}}),
    ({"episodes_limit": 3, "commitments": {"inject_limit": 1}}, {"limit": 0}),
]


@pytest.mark.parametrize(("store", "block"), BLOCKS)
def test_the_block_read_in_one_statement_is_the_block_read_section_by_section(tenant, varied, monkeypatch, store, block):
    """R-7.5: the same sections, lines, order, trace and detail, for a person and for nobody."""
    store_injection(tenant.index, **store)
    key = injecting_key(tenant, **block)
    lines = 0
    for subject in ("anna", "bram", "nobody-yet", None):
        for topic in TOPICS:
            apart = _block(key, subject=subject, topic=topic, together=False, written=False, monkeypatch=monkeypatch)
            lines += len(apart[3])
            for written in (False, True):
                together = _block(key, subject=subject, topic=topic, together=True, written=written, monkeypatch=monkeypatch)
                assert together == apart, (subject, topic, written)
    assert lines >= 20  # the blocks compared hold records
