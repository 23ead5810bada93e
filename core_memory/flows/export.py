"""Everything Core holds about one person, as one JSON document (GDPR access and portability;
docs/portability.md): `GET /v1/persons/{subject}/export` and the console's person page build it
here.

The document is a fixed head (`format`, `version`, `exported_at`, `organisation_id`, `subject`)
and one key per part. A part is a function of the caller — its organisation and person, and for
a key's caller what that key may read now; the console's (`Caller.console`) reads everything — in
`PERSON_EXPORT_PARTS`:
what a later app keeps about her (extraction's windows, maintenance's proposals) joins the
document as one more entry there, and readers ignore parts they do not know. Erasure
(`core_memory.flows.erasure`) removes what the parts show.
"""
from __future__ import annotations

from collections.abc import Callable

from django.db import transaction
from django.utils import timezone
from rest_framework.fields import DateTimeField

from audit.services import audit_event_record
from core_memory.base.callers import Caller
from core_memory.keys.models import SubjectToken
from core_memory.persons.models import Person
from core_memory.threads.models import Item, Thread
from core_memory.threads.selectors import items_as_caller_reads
from maintenance.selectors import person_proposals
from memory.exporting import PERSON_EXPORT_FORMAT, records_export_with_history
from memory.models import MemoryRecord
from memory.selectors import CORE_WRITTEN_TYPES
from stores.selectors import index_list_available

PERSON_EXPORT_VERSION = 1
_TIME = DateTimeField()


def _time(value) -> str | None:
    return _TIME.to_representation(value) if value is not None else None


def _person(*, caller: Caller) -> dict | None:
    person = Person.objects.for_organisation(caller.organisation_id).filter(subject=caller.subject).first()
    if person is None:
        return None
    return {"helper_model_may_read": person.helper_model_may_read, "created_at": _time(person.created_at), "updated_at": _time(person.updated_at)}


def _readable_index_ids(caller: Caller) -> list[str] | None:
    """The indexes whose records the caller's key may read now; None (every index) for the
    organisation's own export (the console's, with no key)."""
    if caller.key is None:
        return None
    return [index.id for index in index_list_available(caller=caller) if caller.may_read(index.id)]


def _records_of_types(*, caller: Caller, types: tuple[str, ...] | None, excluding: tuple[str, ...] = ()):
    records = MemoryRecord.objects.for_organisation(caller.organisation_id).filter(subject=caller.subject).order_by("id")
    readable = _readable_index_ids(caller)
    if readable is not None:
        records = records.filter(index_id__in=readable)
    if types is not None:
        records = records.filter(type__in=types)
    if excluding:
        records = records.exclude(type__in=excluding)
    return records_export_with_history(records)


def _records(*, caller: Caller) -> list[dict]:
    """Her records of every index and status (deleted ones too: their versions are kept), each
    with its history and provenance; episodes and lessons have parts of their own."""
    return _records_of_types(caller=caller, types=None, excluding=CORE_WRITTEN_TYPES)


def _episodes(*, caller: Caller) -> list[dict]:
    return _records_of_types(caller=caller, types=("episode",))


def _lessons(*, caller: Caller) -> list[dict]:
    return _records_of_types(caller=caller, types=("lesson",))


def _item(item: Item) -> dict:
    return {
        "id": item.id,
        "role": item.role,
        "kind": item.kind,
        "content": item.content,
        "name": item.name or None,
        "call_id": item.call_id or None,
        "sealed": item.sealed,
        "response_id": item.response_id,
        "created_at": _time(item.created_at),
        # Only where a key's export left a memory tool's content out (threads.selectors.items_as_caller_reads).
        **({"withheld": True} if getattr(item, "withheld", False) else {}),
    }


def _threads(*, caller: Caller) -> list[dict]:
    """Her conversations, each with its items in order (for a key, as it may read them now)."""
    threads = Thread.objects.for_organisation(caller.organisation_id).filter(subject=caller.subject).order_by("id")
    items: dict[str, list[dict]] = {}
    stored = list(Item.objects.for_organisation(caller.organisation_id).filter(thread__in=threads).order_by("thread_id", "position"))
    for item in items_as_caller_reads(caller=caller, items=stored):
        items.setdefault(item.thread_id, []).append(_item(item))
    return [
        {
            "id": thread.id,
            "key_id": thread.key_id,
            "metadata": thread.metadata,
            "created_at": _time(thread.created_at),
            "last_item_at": _time(thread.last_item_at),
            "items": items.get(thread.id, []),
        }
        for thread in threads
    ]


def _subject_tokens(*, caller: Caller) -> list[dict]:
    """The tokens minted for her (never a secret: Core keeps only a hash)."""
    tokens = SubjectToken.objects.for_organisation(caller.organisation_id).filter(subject=caller.subject).order_by("id")
    return [{"id": token.id, "key_id": token.key_id, "created_at": _time(token.created_at), "expires_at": _time(token.expires_at)} for token in tokens]


def _proposals(*, caller: Caller) -> list[dict]:
    """The proposals resting on her records, each with her records among its sources
    (not another person's: those are theirs)."""
    readable = _readable_index_ids(caller)
    return [
        {
            "id": proposal.id,
            "index_id": proposal.index_id,
            "type": proposal.type,
            "text": proposal.text,
            "reason": proposal.reason,
            "status": proposal.status,
            "record_ids": [source.record_id for source in proposal.sources.all() if source.record.subject == caller.subject],
            "created_at": _time(proposal.created_at),
            "decided_at": _time(proposal.decided_at),
        }
        for proposal in person_proposals(caller=caller, subject=caller.subject)
        if readable is None or proposal.index_id in readable
    ]


# Each part of the document: its key and the function that reads it. Add a part here when an
# app keeps something new about a person (and teach erasure to remove it).
PERSON_EXPORT_PARTS: dict[str, Callable[..., object]] = {
    "person": _person,
    "records": _records,
    "episodes": _episodes,
    "lessons": _lessons,
    "threads": _threads,
    "subject_tokens": _subject_tokens,
    "proposals": _proposals,
}


def person_export_document(*, caller: Caller) -> dict:
    """The document about the caller's person (a read; `person_export` is the audited service that
    hands it out). For a key's caller it holds only what the key may read now: records, proposals
    and memory tools' results of the indexes it may read; the console's holds everything."""
    document = {
        "format": PERSON_EXPORT_FORMAT,
        "version": PERSON_EXPORT_VERSION,
        "exported_at": _time(timezone.now()),
        "organisation_id": caller.organisation_id,
        "subject": caller.subject,
    }
    for name, part in PERSON_EXPORT_PARTS.items():
        document[name] = part(caller=caller)
    return document


@transaction.atomic(durable=True)
def person_export(*, caller: Caller) -> dict:
    """Everything Core holds about the caller's person (that its key may read, when a key asks),
    audited as `person.exported` with what it held."""
    document = person_export_document(caller=caller)
    counts = {name: len(value) for name, value in document.items() if name in PERSON_EXPORT_PARTS and isinstance(value, list)}
    audit_event_record(caller=caller, action="person.exported", target=caller.subject, details=counts)
    return document
