"""`as_of` on the list, a record and search: memory as it stood then, from the records' history,
with today's rights."""
from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from memory.models import MemoryRecord

NOW = timezone.now()
LAST_WEEK = NOW - timedelta(days=7)


def _dated(record_id: str, *moments) -> None:
    """The record's versions, oldest first, as made at `moments` (history is stamped at save)."""
    versions = list(MemoryRecord.history.filter(id=record_id).order_by("history_id"))
    for version, moment in zip(versions, moments):
        MemoryRecord.history.filter(history_id=version.history_id).update(history_date=moment)


def _world(tenant):
    """Anna lived in Delft from ten days ago; two days ago she moved to Leiden (a correction),
    and a note of last week was deleted yesterday. Bram's record is never hers to see."""
    client = tenant.client(subject="anna")
    delft = client.post("/v1/memory", {"index_id": tenant.index.id, "type": "fact", "text": "Anna lives in Delft"}, format="json").json()["memory_id"]
    leiden = client.post(
        "/v1/memory", {"index_id": tenant.index.id, "type": "fact", "text": "Anna lives in Leiden", "replaces": delft}, format="json"
    ).json()["memory_id"]
    note = client.post("/v1/memory", {"index_id": tenant.index.id, "type": "fact", "text": "Anna lives near the station"}, format="json").json()["memory_id"]
    client.delete(f"/v1/memory/{note}")
    bram = tenant.client(subject="bram").post(
        "/v1/memory", {"index_id": tenant.index.id, "type": "fact", "text": "Bram lives in Delft"}, format="json"
    ).json()["memory_id"]
    _dated(delft, NOW - timedelta(days=10), NOW - timedelta(days=2))  # created, ended by the correction
    _dated(leiden, NOW - timedelta(days=2))
    _dated(note, NOW - timedelta(days=8), NOW - timedelta(days=1))  # created, deleted
    _dated(bram, NOW - timedelta(days=9))
    return client, {"delft": delft, "leiden": leiden, "note": note, "bram": bram}


def test_a_search_as_of_last_week_returns_last_weeks_truth(tenant):
    """The issue's last "done when"."""
    client, ids = _world(tenant)

    def found(**asked):
        answer = client.post("/v1/memory/search", {"index_id": tenant.index.id, "query": "where does Anna live", **asked}, format="json")
        assert answer.status_code == 200, answer.json()
        return [(hit["id"], hit["text"], hit["status"]) for hit in answer.json()["data"]]

    then = found(as_of=LAST_WEEK.isoformat())
    assert sorted(then) == sorted([(ids["delft"], "Anna lives in Delft", "active"), (ids["note"], "Anna lives near the station", "active")])
    assert [hit[0] for hit in found()] == [ids["leiden"]]
    assert MemoryRecord.objects.get(pk=ids["delft"]).retrieval_count == 0  # a look back counts no retrieval


def test_the_list_as_of_a_time_shows_the_records_then_for_her_only(tenant):
    client, ids = _world(tenant)

    listed = client.get("/v1/memory", {"index_id": tenant.index.id, "as_of": LAST_WEEK.isoformat()})
    everyone = tenant.client().get("/v1/memory", {"index_id": tenant.index.id, "as_of": LAST_WEEK.isoformat()})
    before = client.get("/v1/memory", {"index_id": tenant.index.id, "as_of": (NOW - timedelta(days=20)).isoformat()})

    assert listed.status_code == 200
    assert sorted(item["id"] for item in listed.json()["data"]) == sorted([ids["delft"], ids["note"]])
    assert sorted(item["id"] for item in everyone.json()["data"]) == sorted([ids["delft"], ids["note"], ids["bram"]])
    assert before.json()["data"] == []
    assert [item["id"] for item in client.get("/v1/memory", {"index_id": tenant.index.id, "as_of": LAST_WEEK.isoformat(), "q": "station"}).json()["data"]] == [ids["note"]]


def test_a_record_as_of_a_time_is_its_version_then(tenant):
    client, ids = _world(tenant)

    then = client.get(f"/v1/memory/{ids['delft']}", {"as_of": LAST_WEEK.isoformat()})
    now = client.get(f"/v1/memory/{ids['delft']}")
    deleted_then = client.get(f"/v1/memory/{ids['note']}", {"as_of": NOW.isoformat()})
    not_yet = client.get(f"/v1/memory/{ids['leiden']}", {"as_of": LAST_WEEK.isoformat()})

    assert (then.status_code, then.json()["status"], then.json()["replaced_by"]) == (200, "active", None)
    assert (now.json()["status"], now.json()["replaced_by"]) == ("ended", ids["leiden"])
    assert deleted_then.status_code == 404 and not_yet.status_code == 404


def test_as_of_keeps_todays_rights(tenant):
    """R-12.1: another person's record and an index the key may no longer read stay closed."""
    client, ids = _world(tenant)
    no_read, _key = tenant.key_client(read=(), write=(tenant.index.id,))

    assert client.get(f"/v1/memory/{ids['bram']}", {"as_of": LAST_WEEK.isoformat()}).status_code == 404
    assert no_read.get(f"/v1/memory/{ids['delft']}", {"as_of": LAST_WEEK.isoformat()}).status_code == 403
    assert no_read.post(
        "/v1/memory/search", {"index_id": tenant.index.id, "query": "Anna", "as_of": LAST_WEEK.isoformat()}, format="json"
    ).status_code == 403


def test_as_of_in_the_future_is_a_400_naming_it(tenant):
    ahead = (NOW + timedelta(days=1)).isoformat()

    answer = tenant.client().post("/v1/memory/search", {"index_id": tenant.index.id, "query": "x", "as_of": ahead}, format="json")
    listed = tenant.client().get("/v1/memory", {"index_id": tenant.index.id, "as_of": ahead})

    assert (answer.status_code, answer.json()["error"]["param"]) == (400, "as_of")
    assert (listed.status_code, listed.json()["error"]["param"]) == (400, "as_of")


def test_the_console_record_page_shows_the_record_as_it_stood(tenant, console):
    _client, ids = _world(tenant)
    page = f"/console/memory/memoryrecord/{ids['delft']}/change/"

    then = console.get(page, {"as_of": LAST_WEEK.isoformat()}).content.decode()
    before = console.get(page, {"as_of": (NOW - timedelta(days=20)).isoformat()}).content.decode()

    assert "<q>Anna lives in Delft</q> — actief" in then  # the console speaks Dutch by default
    assert "Het bestond toen nog niet." in before
    assert console.get(page, {"as_of": "2026-13-45T00:00"}).status_code == 200
