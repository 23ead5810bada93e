"""Two identical writes at the same moment make one record and one confirmation (R-5.4)."""
import threading

import pytest
from django.db import connections, transaction

from core_memory.base.callers import Caller
from memory.models import MemoryRecord
from memory.services.batches import records_write_batch
from memory.services.writes import RecordDraft, record_write, record_write_within
from tests.locks import sessions_blocked_within

LOCK_WAIT_SECONDS = 10


def _in_thread(target, results, name):
    def run():
        try:
            results[name] = target()
        except Exception as error:  # reported by the test's assertions
            results[name] = error
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def _racing_an_uncommitted_write(tenant, *, subject: str | None, second) -> tuple[int, dict]:
    """`second` run while another session holds an uncommitted write of "Acme betaalt per maand"
    for `subject`, which commits once `second` waits on it: how many sessions were seen waiting,
    and each side's result ("first", "second")."""
    written, release = threading.Event(), threading.Event()
    results = {}

    def first():
        with transaction.atomic():
            result = record_write_within(caller=Caller(key=tenant.key, subject=subject, actor="a"), index=tenant.index, draft=RecordDraft(type="fact", text="Acme betaalt per maand"))
            written.set()
            release.wait(LOCK_WAIT_SECONDS)
        return result

    first_thread = _in_thread(first, results, "first")
    assert written.wait(LOCK_WAIT_SECONDS)
    second_thread = _in_thread(second, results, "second")
    blocked = sessions_blocked_within(LOCK_WAIT_SECONDS)
    release.set()
    first_thread.join(LOCK_WAIT_SECONDS)
    second_thread.join(LOCK_WAIT_SECONDS)
    return blocked, results


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("subject", [None, "anna"])
def test_a_write_racing_an_uncommitted_identical_write_confirms_it(tenant, subject):
    """The second writer does not see the first's row, inserts, waits on the unique
    index, and — once the first commits — confirms the record that won."""

    def second():
        return record_write(caller=Caller(key=tenant.key, subject=subject, actor="b"), index=tenant.index, draft=RecordDraft(type="fact", text="acme betaalt per maand."))

    blocked, results = _racing_an_uncommitted_write(tenant, subject=subject, second=second)

    assert blocked == 1
    assert (results["first"].status, results["second"].status) == ("created", "confirmed")
    record = MemoryRecord.objects.get()
    assert record.id == results["first"].record.id == results["second"].record.id
    assert record.confirmations == 1
    assert [version.history_change_reason for version in record.history.order_by("history_id")] == ["created by a", "confirmed by b"]


@pytest.mark.django_db(transaction=True)
def test_many_simultaneous_identical_writes_make_one_record(tenant):
    writers = 4
    barrier = threading.Barrier(writers)
    results = {}

    def write():
        barrier.wait(LOCK_WAIT_SECONDS)
        return record_write(caller=Caller(key=tenant.key, subject=None, actor="t"), index=tenant.index, draft=RecordDraft(type="preference", text="Koffie zwart")).status

    threads = [_in_thread(write, results, number) for number in range(writers)]
    for thread in threads:
        thread.join(LOCK_WAIT_SECONDS * 2)

    assert sorted(results.values()) == ["confirmed"] * (writers - 1) + ["created"]
    assert MemoryRecord.objects.get().confirmations == writers - 1


@pytest.mark.django_db(transaction=True)
def test_a_batch_racing_an_uncommitted_identical_write_confirms_it_and_writes_the_rest(tenant):
    """A batch inserts its new records together; when a concurrent write of one of their texts
    wins, the batch's items are settled one by one as single writes settle that race."""

    def batch():
        drafts = [RecordDraft(type="fact", text=text) for text in ("Werkt bij Acme", "acme betaalt per maand.", "Woont in Delft")]
        return records_write_batch(caller=Caller(key=tenant.key, subject="anna"), index=tenant.index, drafts=drafts)

    blocked, results = _racing_an_uncommitted_write(tenant, subject="anna", second=batch)

    assert blocked == 1
    assert [result.status for result in results["second"]] == ["created", "confirmed", "created"]
    assert results["second"][1].record.id == results["first"].record.id
    assert MemoryRecord.objects.get(pk=results["first"].record.id).confirmations == 1
    assert sorted(MemoryRecord.objects.values_list("text", flat=True)) == ["Acme betaalt per maand", "Werkt bij Acme", "Woont in Delft"]
