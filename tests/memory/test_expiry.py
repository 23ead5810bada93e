"""Records that expire: `expires_at` on a write (or the store's lifetime per type), hidden from
every read once it passed, ended by maintenance after a grace period."""
from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from audit.models import AuditEvent
from core_memory.base.callers import Caller
from memory.exporting import records_export_with_history
from memory.models import MemoryRecord
from memory.search import SearchFilters, record_search
from memory.selectors import record_list
from memory.services.expiry import records_expired_end
from tests.memory.injection.builders import build, injecting_key

SOON = timedelta(hours=1)


def _write(client, index_id: str, text: str, **fields):
    return client.post("/v1/memory", {"index_id": index_id, "type": "fact", "text": text, **fields}, format="json")


def test_a_temporary_fact_disappears_on_time_from_search_list_and_injection(tenant):
    """The issue's first "done when": until its time it is found everywhere, after it nowhere."""
    now = timezone.now()
    client = tenant.client(subject="anna")
    written = _write(client, tenant.index.id, "Anna works from Utrecht this week", expires_at=(now + SOON).isoformat())
    _write(client, tenant.index.id, "Anna works from Delft")
    assert written.status_code == 201
    caller, key = Caller(key=tenant.key, subject="anna"), injecting_key(tenant)

    def shown(at):
        searched = [record.text for record, _ in record_search(caller=caller, index=tenant.index, query="Anna works from", filters=SearchFilters(), now=at)]
        listed = [record.text for record in record_list(caller=caller, index=tenant.index, filters={}, now=at)]
        return searched, listed, build(key, now=at).text

    searched, listed, block = shown(now)
    assert "Anna works from Utrecht this week" in searched and "Anna works from Utrecht this week" in listed and "Utrecht" in block
    searched, listed, block = shown(now + SOON + timedelta(seconds=1))
    assert searched == ["Anna works from Delft"] and listed == ["Anna works from Delft"]
    assert "Utrecht" not in block and "Delft" in block


def test_an_expired_record_is_left_out_of_the_api_unless_asked_for(tenant):
    client = tenant.client(subject="anna")
    record_id = _write(client, tenant.index.id, "On leave").json()["memory_id"]
    past = (timezone.now() - timedelta(minutes=1)).isoformat()

    changed = client.patch(f"/v1/memory/{record_id}", {"expires_at": past}, format="json")

    assert changed.status_code == 200 and changed.json()["expires_at"] is not None
    assert client.get("/v1/memory", {"index_id": tenant.index.id}).json()["data"] == []
    assert [item["id"] for item in client.get("/v1/memory", {"index_id": tenant.index.id, "expired": "true"}).json()["data"]] == [record_id]
    assert client.post("/v1/memory/search", {"index_id": tenant.index.id, "query": "leave"}, format="json").json()["data"] == []
    assert client.get(f"/v1/memory/{record_id}").status_code == 200  # asked for by id, it is shown with its expires_at
    assert MemoryRecord.objects.get().status == "active"  # hidden, not yet ended


def test_a_write_whose_expiry_has_passed_is_refused_naming_the_field(tenant):
    answer = _write(tenant.client(), tenant.index.id, "Was true", expires_at=(timezone.now() - SOON).isoformat())

    assert answer.status_code == 400 and answer.json()["error"]["param"] == "expires_at"
    assert not MemoryRecord.objects.exists()


def test_a_stores_lifetime_per_type_sets_expiry_unless_the_write_says(tenant):
    store = tenant.client().patch(f"/v1/memory/stores/{tenant.index.id}", {"expiry": {"lifetime_days": {"commitment": 7}}}, format="json")
    assert store.status_code == 200 and store.json()["expiry"] == {"lifetime_days": {"commitment": 7.0}}
    client = tenant.client(subject="anna")
    own = (timezone.now() + timedelta(days=2)).replace(microsecond=0)

    defaulted = _write(client, tenant.index.id, "Send the offer", type="commitment").json()["memory_id"]
    given = _write(client, tenant.index.id, "Call Bram", type="commitment", expires_at=own.isoformat()).json()["memory_id"]
    lasting = _write(client, tenant.index.id, "Likes tea").json()["memory_id"]

    records = {record.id: record for record in MemoryRecord.objects.all()}
    assert records[defaulted].expires_at - records[defaulted].created_at == pytest.approx(timedelta(days=7), abs=timedelta(seconds=5))
    assert records[given].expires_at == own
    assert records[lasting].expires_at is None


def test_a_repeat_renews_an_expiring_record_and_never_makes_a_lasting_one_expire(tenant):
    """R-5.4: a confirmation, with the store's lifetime applied to it."""
    tenant.client().patch(f"/v1/memory/stores/{tenant.index.id}", {"expiry": {"lifetime_days": {"preference": 1}}}, format="json")
    client = tenant.client(subject="anna")
    soon = timezone.now() + SOON
    expiring = _write(client, tenant.index.id, "Prefers mornings", type="preference", expires_at=soon.isoformat()).json()["memory_id"]
    MemoryRecord.objects.filter(pk=expiring).update(expires_at=soon)
    lasting_id = _write(client, tenant.index.id, "Likes tea").json()["memory_id"]

    repeat = _write(client, tenant.index.id, "prefers mornings.", type="preference")
    _write(client, tenant.index.id, "likes tea")

    assert repeat.json()["status"] == "confirmed"
    assert MemoryRecord.objects.get(pk=expiring).expires_at > soon + timedelta(hours=20)
    assert MemoryRecord.objects.get(pk=lasting_id).expires_at is None


def test_maintenance_ends_an_expired_record_after_the_grace_period_audited(tenant, write):
    now = timezone.now()
    gone = write("Away until Friday", subject="anna", expires_at=now + SOON)
    within = write("In Rome until Saturday", subject="anna", expires_at=now + timedelta(days=1))

    assert records_expired_end(grace=timedelta(hours=24), now=now + SOON + timedelta(hours=23)) == 0
    ended = records_expired_end(grace=timedelta(hours=24), now=now + SOON + timedelta(hours=25))

    assert ended == 1
    gone.refresh_from_db()
    within.refresh_from_db()
    assert (gone.status, within.status) == ("ended", "active")
    assert gone.history.first().history_change_reason == "expired by core:maintenance"
    event = AuditEvent.objects.get(action="memory.expired")
    assert (event.target, event.actor) == (gone.id, "core:maintenance")


def test_export_and_import_carry_expires_at(tenant, other_tenant, write):
    until = (timezone.now() + timedelta(days=3)).replace(microsecond=0)
    record = write("On call this week", subject="anna", expires_at=until)
    [line] = records_export_with_history([record])
    assert line["expires_at"] == until.isoformat().replace("+00:00", "Z")

    answer = other_tenant.client().post(
        f"/v1/memory/import?index_id={other_tenant.index.id}", json.dumps(line) + "\n", content_type="application/x-ndjson"
    )

    assert answer.status_code == 200 and answer.json()["created"] == 1
    assert MemoryRecord.objects.get(organisation=other_tenant.organisation).expires_at == until
