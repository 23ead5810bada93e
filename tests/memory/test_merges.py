"""Issue 32: duplicates merged (memory.services.merges and the console's pages over it,
memory.admin.merges): one record kept, its text as the administrator words it, the others ended,
replaced by it — versioned, audited, all or nothing; only records of one person in one index."""
from __future__ import annotations

import pytest
from django.contrib.admin.utils import quote

from audit.models import AuditEvent
from core_memory.base.callers import Caller
from core_memory.base.errors import ApplicationError, NotFound
from memory.models import MemoryRecord
from memory.selectors import change_reason_parts
from memory.services.merges import records_merge_by_administrator

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_password_hashing")]

RECORDS = "/console/memory/memoryrecord/"


@pytest.fixture
def anna(tenant):
    return Caller.console(organisation_id=tenant.organisation.id, actor="console:anna")


@pytest.fixture
def duplicates(write):
    return [write("Anna woont in Delft", subject="anna"), write("Anna woont sinds 2020 in Delft", subject="anna"), write("Woont in Delft", subject="anna")]


def latest_version(record: MemoryRecord) -> tuple[str, str | None]:
    return change_reason_parts(MemoryRecord.history.filter(id=record.pk).latest("history_date").history_change_reason)


def test_the_others_end_replaced_by_the_one_kept_which_takes_the_words_chosen(anna, duplicates):
    first, second, third = duplicates

    kept = records_merge_by_administrator(
        caller=anna, record_ids=[first.pk, second.pk, third.pk], kept_id=second.pk, text="Anna woont in Delft (sinds 2020)"
    )

    assert (kept.pk, kept.text, kept.status) == (second.pk, "Anna woont in Delft (sinds 2020)", "active")
    for ended in (first, third):
        ended.refresh_from_db()
        assert (ended.status, ended.replaced_by_id) == ("ended", second.pk)
        assert latest_version(ended) == ("merged into", "console:anna")
    assert latest_version(kept) == ("merged", "console:anna")
    merged = AuditEvent.objects.filter(action="memory.merged").order_by("target")
    assert [(event.target, event.details) for event in merged] == sorted(
        [(first.pk, {"merged_into": second.pk}), (third.pk, {"merged_into": second.pk})]
    )
    assert AuditEvent.objects.get(action="memory.updated", target=second.pk).details == {"fields": ["text"]}


def test_the_one_kept_may_take_the_words_of_a_duplicate_it_ends(anna, duplicates):
    first, second, _third = duplicates

    kept = records_merge_by_administrator(caller=anna, record_ids=[first.pk, second.pk], kept_id=second.pk, text="Anna woont in Delft")

    assert kept.text == "Anna woont in Delft"
    assert not AuditEvent.objects.filter(action="memory.updated").exclude(target=second.pk).exists()


def test_kept_as_it_is_without_new_words_still_gets_a_version(anna, duplicates):
    first, second, _third = duplicates

    records_merge_by_administrator(caller=anna, record_ids=[first.pk, second.pk], kept_id=first.pk)

    first.refresh_from_db()
    assert (first.text, latest_version(first)) == ("Anna woont in Delft", ("merged", "console:anna"))
    assert not AuditEvent.objects.filter(action="memory.updated").exists()


@pytest.mark.parametrize("case", ["one record", "kept not among them", "two persons", "empty text", "already ended"])
def test_a_merge_that_cannot_be_is_refused_naming_why_and_changes_nothing(anna, write, duplicates, case):
    first, second, _third = duplicates
    ids, kept, text = [first.pk, second.pk], first.pk, None
    if case == "one record":
        ids = [first.pk]
    elif case == "kept not among them":
        kept = duplicates[2].pk
    elif case == "two persons":
        ids = [first.pk, write("Bram woont in Delft", subject="bram").pk]
    elif case == "empty text":
        text = "  "
    else:
        records_merge_by_administrator(caller=anna, record_ids=[first.pk, duplicates[2].pk], kept_id=duplicates[2].pk)
    before = AuditEvent.objects.count()

    with pytest.raises(ApplicationError) as refused:
        records_merge_by_administrator(caller=anna, record_ids=ids, kept_id=kept, text=text)

    assert refused.value.param == {"empty text": "text", "kept not among them": "kept"}.get(case, "record_ids")
    assert MemoryRecord.objects.get(pk=second.pk).status == "active"
    assert AuditEvent.objects.count() == before


def test_another_organisations_record_is_not_found_and_nothing_ends(anna, write, other_write):
    mine, theirs = write("Anna woont in Delft", subject="anna"), other_write("Anna woont in Delft", subject="anna")

    with pytest.raises(NotFound):
        records_merge_by_administrator(caller=anna, record_ids=[mine.pk, theirs.pk], kept_id=mine.pk)

    assert MemoryRecord.objects.get(pk=theirs.pk).status == "active"


def test_in_the_console_duplicates_are_merged_after_choosing_the_one_kept_and_seeing_what_happens(console, duplicates):
    first, second, third = duplicates
    chosen = {"action": "merge_records", "_selected_action": [first.pk, second.pk, third.pk]}

    choose = console.post(RECORDS, chosen)
    assert choose.status_code == 200 and [record.pk for record in choose.context["records"]] == [first.pk, second.pk, third.pk]
    check = console.post(RECORDS, {**chosen, "post": "check", "kept": third.pk, "text": "Anna woont in Delft."})
    assert check.context["confirming"] and [record.pk for record in check.context["ended"]] == [first.pk, second.pk]
    assert MemoryRecord.objects.filter(status="active", subject="anna").count() == 3

    done = console.post(RECORDS, {**chosen, "post": "yes", "kept": third.pk, "text": "Anna woont in Delft."})

    assert done.status_code == 302 and done["Location"].endswith(f"{quote(third.pk)}/change/")
    assert list(MemoryRecord.objects.filter(status="active", subject="anna").values_list("pk", "text")) == [(third.pk, "Anna woont in Delft.")]


def test_in_the_console_an_empty_text_is_refused_on_the_merge_page_in_dutch(console, duplicates):
    first, second, _third = duplicates

    page = console.post(RECORDS, {"action": "merge_records", "_selected_action": [first.pk, second.pk], "post": "check", "kept": first.pk, "text": ""})

    assert page.context["error"] == "Dit veld mag niet leeg zijn."
    assert MemoryRecord.objects.get(pk=second.pk).status == "active"
