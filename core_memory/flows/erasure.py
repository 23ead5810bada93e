"""Erasing a person: everything Core holds about her, in every layer, in one
transaction, with a receipt of what went (docs/decisions.md "Erasing a person")."""
from __future__ import annotations

from django.contrib.admin.models import LogEntry
from django.db import transaction

from audit.services import person_audit_counted, person_erasure_audit
from core_memory.base.callers import Caller
from core_memory.base.erasure import person_data_keepers
from core_memory.keys.selectors import subject_tokens_counted
from core_memory.keys.services import subject_tokens_erase
from core_memory.persons.selectors import person_rules
from core_memory.persons.services import person_forget
from core_memory.pii.selectors import person_placeholders_counted
from core_memory.pii.services import person_placeholders_erase
from core_memory.threads.models import Item, Response, Thread
from core_memory.threads.selectors import person_threads_counted
from core_memory.threads.services import person_threads_erase
from core_memory.webhooks.selectors import person_webhook_events_counted
from core_memory.webhooks.services import person_webhook_events_erase, webhook_event_emit
from extraction.selectors import person_windows_counted
from extraction.services.windows import person_windows_erase
from maintenance.selectors import person_jobs_counted, proposals_resting_only_on
from maintenance.services.jobs import person_jobs_erase
from maintenance.services.proposals import person_proposals_erase
from memory.models import MemoryRecord
from memory.selectors import person_records_counted
from memory.services.erasure import person_records_erase


@transaction.atomic(durable=True)
def person_erase(*, caller: Caller, subject: str) -> dict:
    """Erases a person: her records with every version (episodes and lessons counted apart),
    every proposal resting only on her records, maintenance's jobs about her, her
    threads with their items and responses — counting first their extraction windows and the
    real values behind their placeholders — her subject tokens and her rules. Audited
    as `person.erased` with the receipt, naming her by a commitment, not in clear. What else
    holds her data goes too: the console's action log about her records and threads, the
    interfaces' stored answers about her (core_memory.base.erasure), and in the audit's other
    events her name, her records', threads' and turns' ids and the search terms about her,
    scrubbed so that its chains still verify. Erasing a person never named is not an error:
    afterwards she is gone either way."""
    # Her ids, read before they go: the action log and the audit name her records and threads by id.
    record_ids, thread_ids = _her_ids(caller=caller, subject=subject)
    audited_ids = _her_audited_ids(caller=caller, record_ids=record_ids, thread_ids=thread_ids)
    # Work in flight first: a window or a job being written holds its row until its records
    # are in, so her records are read for erasing after any of them committed.
    windows = person_windows_erase(caller=caller, subject=subject)
    jobs = person_jobs_erase(caller=caller, subject=subject)
    # After the work that could still tell of her (a window failing), before her records.
    webhook_events = person_webhook_events_erase(caller=caller, subject=subject, record_ids=record_ids)
    # Before her records: which proposals rest only on them is read through them.
    proposals = person_proposals_erase(caller=caller, subject=subject)
    records = person_records_erase(caller=caller, subject=subject)
    placeholders = person_placeholders_erase(caller=caller, subject=subject)
    threads = person_threads_erase(caller=caller, subject=subject)
    tokens = subject_tokens_erase(caller=caller, subject=subject)
    person_forget(caller=caller, subject=subject)
    console_actions = _console_actions(record_ids=record_ids, thread_ids=thread_ids).delete()[0]
    kept_elsewhere = {
        keeper.name: keeper.erase(organisation_id=caller.organisation_id, subject=subject) for keeper in person_data_keepers()
    }
    receipt = {
        **records,
        "proposals": proposals,
        "threads": threads,
        "thread_placeholders": placeholders,
        "extraction_windows": windows,
        "maintenance_jobs": jobs,
        "subject_tokens": tokens,
        "webhook_events": webhook_events,
        "console_actions": console_actions,
        **kept_elsewhere,
    }
    erasure = person_erasure_audit(caller=caller, subject=subject, ids=audited_ids, receipt=receipt)
    # Told to the subscribers, who hold her data too: they must know whom to erase. The event is
    # about no one Core still holds (no column names her) and its payload drops her name once
    # every delivery of it has been sent (core_memory.webhooks.delivery).
    webhook_event_emit(caller=caller, kind="person.erased", data={"subject": subject})
    return {"subject": subject, "erased": {**receipt, "audit_events_scrubbed": erasure.details["audit_events_scrubbed"]}}


def person_erasure_preview(*, caller: Caller, subject: str) -> dict:
    """What `person_erase` would remove now, in the receipt's terms: her records per type (every
    status), the proposals resting only on them, her threads, their placeholders and extraction
    windows, maintenance's jobs about her, her subject tokens, and whether she has stored rules.
    Reads only."""
    record_ids, thread_ids = _her_ids(caller=caller, subject=subject)
    return {
        "subject": subject,
        "records_per_type": person_records_counted(caller=caller, subject=subject),
        "proposals": proposals_resting_only_on(caller=caller, subject=subject).count(),
        "threads": person_threads_counted(caller=caller, subject=subject),
        "subject_tokens": subject_tokens_counted(caller=caller, subject=subject),
        "thread_placeholders": person_placeholders_counted(caller=caller, subject=subject),
        "extraction_windows": person_windows_counted(caller=caller, subject=subject),
        "maintenance_jobs": person_jobs_counted(caller=caller, subject=subject),
        "webhook_events": person_webhook_events_counted(caller=caller, subject=subject),
        "rules": bool(person_rules(caller=caller, subjects=[subject])),
        "console_actions": _console_actions(record_ids=record_ids, thread_ids=thread_ids).count(),
        **{keeper.name: keeper.count(organisation_id=caller.organisation_id, subject=subject) for keeper in person_data_keepers()},
        "audit_events_scrubbed": person_audit_counted(
            caller=caller, subject=subject,
            ids=_her_audited_ids(caller=caller, record_ids=record_ids, thread_ids=thread_ids),
        ),
    }


def _her_ids(*, caller: Caller, subject: str) -> tuple[list[str], list[str]]:
    """Her records' ids (every version's, every status) and her threads' ids."""
    versions = MemoryRecord.history.filter(organisation_id=caller.organisation_id, subject=subject).values_list("id", flat=True)
    records = MemoryRecord.objects.for_organisation(caller.organisation_id).filter(subject=subject).values_list("id", flat=True)
    threads = Thread.objects.for_organisation(caller.organisation_id).filter(subject=subject).values_list("id", flat=True)
    return sorted({*versions, *records}), list(threads)


def _her_audited_ids(*, caller: Caller, record_ids: list[str], thread_ids: list[str]) -> list[str]:
    """The ids the audit log may name her by: her records', her threads', and their turns' and
    items' (a console read of her thread lists them)."""
    responses = Response.objects.for_organisation(caller.organisation_id).filter(thread_id__in=thread_ids).values_list("id", flat=True)
    items = Item.objects.for_organisation(caller.organisation_id).filter(thread_id__in=thread_ids).values_list("id", flat=True)
    return sorted({*record_ids, *thread_ids, *responses, *items})


def _console_actions(*, record_ids: list[str], thread_ids: list[str]):
    """The console's action log about her records and threads: its rows keep a record's text as
    the object's name, and the console's home lists them as recent actions."""
    return LogEntry.objects.filter(object_id__in=[*record_ids, *thread_ids])
