"""A new record and its first version in one statement (memory.services.inserting) against what
`save()` and django-simple-history write for the same record."""
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.forms.models import model_to_dict
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from simple_history.models import HistoricalRecords

from core_memory.organisations.models import Organisation
from core_memory.webhooks.models import WebhookSubscription
from memory.models import MemoryRecord
from memory.services.inserting import record_insert_versioned

pytestmark = pytest.mark.django_db

# What differs between two records written one after the other: the id and the clock.
OWN = {"id", "history_id", "history_date", "created_at", "updated_at"}


NOW = timezone.now()


def _record(tenant, *, subject: str, type_name: str = "episode", now=NOW) -> MemoryRecord:
    return MemoryRecord(
        organisation_id=tenant.index.organisation_id, index=tenant.index, subject=subject, type=type_name,
        text="Sprak over de offerte", normalised_text="sprak over de offerte", metadata={"bron": "gesprek", "n": [1, 2]},
        confidence=0.7, source=MemoryRecord.Source.EXTRACTION, trusted=False, thread_id="thr_1", item_ids=["itm_1", "itm_2"],
        response_id="resp_1", structured={"onderwerp": "offerte"}, expires_at=now + timedelta(days=3), changed_at=now,
    )


def _saved(record: MemoryRecord, reason: str) -> MemoryRecord:
    record._change_reason = reason
    record.save(force_insert=True)
    return record


def _rows(record: MemoryRecord) -> tuple[dict, dict]:
    stored = MemoryRecord.objects.filter(pk=record.pk).values().get()
    [version] = MemoryRecord.history.filter(id=record.pk).values()
    return {name: value for name, value in stored.items() if name not in OWN}, {name: value for name, value in version.items() if name not in OWN}


def test_the_record_and_its_version_are_the_ones_save_writes(tenant):
    """R-5.1: every write keeps its version — the one statement writes the record and its first
    version with the same columns as save() and django-simple-history."""
    saved = _saved(_record(tenant, subject="anna"), "created by key k1")
    inserted = _record(tenant, subject="anna")

    with CaptureQueriesContext(connection) as statements:
        assert record_insert_versioned(record=inserted, reason="created by key k1") == []

    assert len(statements) == 1
    assert _rows(inserted) == _rows(saved)
    assert _rows(inserted)[1]["history_type"] == "+"
    stored = MemoryRecord.objects.values("created_at", "updated_at").get(pk=inserted.pk)
    version = MemoryRecord.history.values("created_at", "updated_at").get(id=inserted.pk)
    assert stored == version == {"created_at": inserted.created_at, "updated_at": inserted.updated_at}
    assert not inserted._state.adding
    assert inserted.search_vector == MemoryRecord.objects.filter(pk=inserted.pk).values_list("search_vector", flat=True).get()


def test_the_version_names_the_console_user_behind_the_request(tenant):
    """R-5.1: the version of a change made from the console names its administrator, as
    django-simple-history's middleware has it."""
    administrator = get_user_model().objects.create_user(username="beheerder", password="x")
    HistoricalRecords.context.request = SimpleNamespace(user=administrator)
    try:
        saved = _saved(_record(tenant, subject="bert"), "created by console")
        inserted = _record(tenant, subject="bert")
        record_insert_versioned(record=inserted, reason="created by console")
    finally:
        del HistoricalRecords.context.request

    assert _rows(inserted)[1]["history_user_id"] == administrator.pk
    assert _rows(inserted) == _rows(saved)


def test_a_text_she_already_has_active_inserts_nothing(tenant):
    """R-5.1: the same words as her active record of the same type are no second record (the
    write confirms instead), and no version is written for it."""
    kept = _saved(_record(tenant, subject="anna", type_name="fact"), "created by key k1")

    again = _record(tenant, subject="anna", type_name="fact")
    assert record_insert_versioned(record=again, reason="created by key k1") is None

    assert list(MemoryRecord.objects.values_list("pk", flat=True)) == [kept.pk]
    assert MemoryRecord.history.count() == 1
    assert model_to_dict(again)["text"] == kept.text and again._state.adding


def test_the_subscribers_read_with_the_insert_are_those_its_event_goes_to(tenant):
    """R-3.4: a created record is told to the organisation's subscriptions that asked for
    `record.created`, and to no other (another kind, another organisation)."""
    other = Organisation.objects.create(name="Ander", timezone="UTC")
    asking = [
        WebhookSubscription.objects.create(organisation=tenant.organisation, url=f"https://example.com/{n}", events=events, secret="s")
        for n, events in enumerate((["record.created"], ["record.updated", "record.created"]))
    ]
    WebhookSubscription.objects.create(organisation=tenant.organisation, url="https://example.com/u", events=["record.updated"], secret="s")
    WebhookSubscription.objects.create(organisation=other, url="https://example.com/o", events=["record.created"], secret="s")

    subscribers = record_insert_versioned(record=_record(tenant, subject="anna"), reason="created by key k1")

    assert sorted(subscribers) == sorted(subscription.pk for subscription in asking)
