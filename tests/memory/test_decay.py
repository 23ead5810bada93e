"""Decay arithmetic in the database (R-5.9): effective = confidence * 0.5 ** (age_days / half_life)."""
from datetime import timedelta

import pytest
from django.utils import timezone

from memory.models import MemoryRecord
from memory.search.decay import effective_confidence_expression
from tests.memory.conftest import age

pytestmark = pytest.mark.django_db

NOW = timezone.now().replace(microsecond=0)


def _effective(record, *, half_life_days, now=NOW):
    return (
        MemoryRecord.objects.annotate(value=effective_confidence_expression(half_life_days=half_life_days, now=now))
        .values_list("value", flat=True)
        .get(pk=record.pk)
    )


def _aged(write, *, type="preference", confidence=1.0, days=0.0):
    record = write(f"{type} {confidence} {days}", type=type, confidence=confidence)
    MemoryRecord.objects.filter(pk=record.pk).update(changed_at=NOW - timedelta(days=days))
    return record


@pytest.mark.parametrize(
    "confidence, days, half_life, expected",
    [
        (1.0, 0, 90, 1.0),
        (1.0, 90, 90, 0.5),
        (0.8, 180, 90, 0.2),
        (1.0, 45, 90, 0.5 ** 0.5),
        (0.6, 7, 14, 0.6 * 0.5 ** 0.5),
        (1.0, 365, 30, 0.5 ** (365 / 30)),
        (0.9, 1.5, 0.5, 0.9 * 0.125),
    ],
)
def test_effective_confidence_halves_per_half_life(write, confidence, days, half_life, expected):
    """R-5.9 at several ages and half-lives."""
    record = _aged(write, confidence=confidence, days=days)
    assert _effective(record, half_life_days={"preference": half_life}) == pytest.approx(expected, abs=1e-9)


def test_types_without_a_half_life_do_not_decay(write):
    """R-5.9."""
    fact = _aged(write, type="fact", confidence=0.7, days=400)
    assert _effective(fact, half_life_days={"preference": 10}) == pytest.approx(0.7)
    assert _effective(fact, half_life_days={}) == pytest.approx(0.7)


def test_each_type_decays_by_its_own_half_life(write):
    preference = _aged(write, type="preference", days=20)
    behaviour = _aged(write, type="behaviour", days=20)
    half_lives = {"preference": 20, "behaviour": 10}
    assert _effective(preference, half_life_days=half_lives) == pytest.approx(0.5)
    assert _effective(behaviour, half_life_days=half_lives) == pytest.approx(0.25)


def test_a_change_in_the_future_counts_as_age_zero(write):
    record = _aged(write, days=-3)
    assert _effective(record, half_life_days={"preference": 10}) == pytest.approx(1.0)


def test_a_confirmation_restarts_the_age(tenant, write):
    """R-5.9: age counts from the last change, a confirmation included."""
    record = _aged(write, days=30)
    write(record.text, type="preference")

    assert _effective(record, half_life_days={"preference": 30}, now=timezone.now()) == pytest.approx(1.0, abs=1e-4)


def test_the_api_shows_the_reading_keys_decay_and_the_stored_confidence(tenant, write):
    """R-5.6, R-5.9: decay is the reading key's `memory.decay.half_life_days`."""
    record = write("koffie", type="preference", confidence=0.8)
    MemoryRecord.objects.filter(pk=record.pk).update(changed_at=timezone.now() - timedelta(days=60))
    client, _key = tenant.key_client(memory={"decay": {"half_life_days": {"preference": 30}}})

    decayed = client.get(f"/v1/memory/{record.id}").json()
    undecayed = tenant.client().get(f"/v1/memory/{record.id}").json()

    assert (decayed["confidence"], decayed["effective_confidence"]) == (0.8, 0.2)
    assert (undecayed["confidence"], undecayed["effective_confidence"]) == (0.8, 0.8)
    assert MemoryRecord.objects.get(pk=record.pk).confidence == 0.8


def test_a_record_many_half_lives_old_reads_as_zero_rather_than_failing(tenant, write):
    """R-5.9: 0.5 ** 1200 underflows a double, and so does 1e-300 * 0.5 ** 80; PostgreSQL
    raises on underflow, so an effective value that small is read as 0."""
    old = age(write("Koffie zwart", type="preference"), days=1200)
    tiny = age(write("Thee met melk", type="preference", confidence=1e-300), days=80)
    zero = age(write("Koffie met melk", type="preference", confidence=0.0), days=3)
    client, _key = tenant.key_client(memory={"decay": {"half_life_days": {"preference": 1}}})

    listed = client.get(f"/v1/memory?index_id={tenant.index.id}")
    shown = client.get(f"/v1/memory/{old.id}")
    found = client.post("/v1/memory/search", {"index_id": tenant.index.id, "query": "koffie thee"}, format="json")
    above_zero = client.get(f"/v1/memory?index_id={tenant.index.id}&min_confidence=0.000001")

    assert listed.status_code == 200, listed.content
    assert {row["id"]: row["effective_confidence"] for row in listed.json()["data"]} == {old.id: 0.0, tiny.id: 0.0, zero.id: 0.0}
    assert (shown.status_code, shown.json()["effective_confidence"], shown.json()["confidence"]) == (200, 0.0, 1.0)
    assert found.status_code == 200
    assert {hit["id"] for hit in found.json()["data"]} == {old.id, tiny.id, zero.id}
    assert above_zero.json()["data"] == []
