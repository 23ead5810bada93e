"""Redacting a thread's texts with the thread's own numbering.

`thread_texts_redact` is the one entry point for turns and extraction: it finds the
personal data in the texts, gives each value its placeholder (the one it already has on
this thread, or the next number), stores new placeholders before anything is sent, and
answers the redacted texts with the placeholders to restore the model's answer with.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.db import transaction

from core_memory.base.callers import Caller
from core_memory.pii.detection import Finding
from core_memory.pii.models import ThreadPlaceholders
from core_memory.pii.placeholders import PlaceholderAssignment, Placeholders, findings_of
from core_memory.pii.selectors import thread_placeholders
from core_memory.threads.models import Thread


@dataclass(frozen=True)
class Redaction:
    """`texts`: the given texts, in order, with placeholders. `placeholders`: the thread's,
    including those given now; `placeholders.restore(answer)` puts the real values back."""

    texts: list[str]
    placeholders: Placeholders


def thread_texts_redact(*, thread: Thread, texts: Sequence[str]) -> Redaction:
    """Redacts `texts` for `thread` (their order decides the numbers of new values). Raises
    `RedactionError` (code `pii_redaction_failed`) when detection fails; then nothing of the
    texts may be sent. New placeholders are committed in their own short transaction, so
    call it outside any transaction."""
    findings = findings_of(texts)
    assignment = PlaceholderAssignment(thread_placeholders(thread=thread))
    redacted = [assignment.redact(text, found) for text, found in zip(texts, findings, strict=True)]
    if not assignment.changed:
        return Redaction(texts=redacted, placeholders=assignment.placeholders)
    return _placeholders_assign(thread=thread, texts=texts, findings=findings)


@transaction.atomic(durable=True)
def _placeholders_assign(*, thread: Thread, texts: Sequence[str], findings: list[list[Finding]]) -> Redaction:
    """Numbers new values under a lock on the thread's placeholders: two turns on one thread
    at once must never give one placeholder to two values."""
    stored, _ = (
        ThreadPlaceholders.objects.for_organisation(thread.organisation_id)
        .select_for_update()
        .get_or_create(thread_id=thread.pk, organisation_id=thread.organisation_id)
    )
    assignment = PlaceholderAssignment(Placeholders(values=stored.values, counters=stored.counters))
    redacted = [assignment.redact(text, found) for text, found in zip(texts, findings, strict=True)]
    placeholders = assignment.placeholders
    if assignment.changed:
        stored.values, stored.counters = dict(placeholders.values), dict(placeholders.counters)
        stored.save(update_fields=["values", "counters", "updated_at"])
    return Redaction(texts=redacted, placeholders=placeholders)


def person_placeholders_erase(*, caller: Caller, subject: str) -> int:
    """Removes the placeholders of her threads (part of erasing her, core_memory.flows.erasure);
    answers how many threads had some."""
    deleted, _ = ThreadPlaceholders.objects.for_organisation(caller.organisation_id).filter(thread__subject=subject).delete()
    return deleted


def texts_redact_alone(texts: Sequence[str]) -> list[str]:
    """`texts` with placeholders numbered among themselves, on no thread and stored nowhere: for
    texts sent to a model whose answer is never read back into words (an embedding model scoring
    them, a rerank model ordering them). Raises `RedactionError`; then send nothing."""
    findings = findings_of(texts)
    assignment = PlaceholderAssignment(Placeholders(values={}, counters={}))
    return [assignment.redact(text, found) for text, found in zip(texts, findings, strict=True)]
