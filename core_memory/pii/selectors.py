"""Reading a thread's placeholders, and how a thread may be read."""
from __future__ import annotations

from enum import StrEnum

from core_memory.base.callers import Caller
from core_memory.keys.models import ApiKey
from core_memory.pii.models import ThreadPlaceholders
from core_memory.pii.placeholders import Placeholders
from core_memory.threads.models import Thread


class ReadMode(StrEnum):
    """How a thread's items may be read by a model other than the conversation's own."""

    AS_WRITTEN = "as_written"
    REDACT = "redact"
    NEVER = "never"


def thread_placeholders(*, thread: Thread) -> Placeholders:
    """The thread's placeholders as stored (none yet: empty)."""
    stored = ThreadPlaceholders.objects.for_organisation(thread.organisation_id).filter(thread_id=thread.pk).first()
    return Placeholders(values=stored.values, counters=stored.counters) if stored else Placeholders()


def thread_read_mode(*, thread: Thread) -> ReadMode:
    """A thread a redacting key wrote into (`Thread.redacting_key_wrote_at`) is
    redacted, whatever its key is now. An older, unmarked thread is judged by what is left
    of it: one in which Core redacted a value is never read; one in which nothing was
    found is redacted while its key exists and has `pii_redaction`, and read as written
    once the key is deleted (a revoked or expired key still exists)."""
    if thread.redacting_key_wrote_at is not None:
        return ReadMode.REDACT
    if thread_placeholders(thread=thread).values:
        return ReadMode.NEVER
    key_redacts = (
        ApiKey.objects.for_organisation(thread.organisation_id)
        .filter(pk=thread.key_id)
        .values_list("pii_redaction", flat=True)
        .first()
    )
    return ReadMode.REDACT if key_redacts else ReadMode.AS_WRITTEN


def person_placeholders_counted(*, caller: Caller, subject: str) -> int:
    """How many of her threads hold placeholders' real values (what erasing her removes)."""
    return ThreadPlaceholders.objects.for_organisation(caller.organisation_id).filter(thread__subject=subject).count()
