"""Writing and purging audit events. Callers write events inside their own transaction."""
from __future__ import annotations

import json

from django.db import connection, transaction
from django.utils import timezone
from django.utils.crypto import salted_hmac

from audit.models import AuditEvent
from core_memory.base.callers import Caller

ACTIONS = (
    "memory.write_denied",
    "memory.console_read",
    "memory.deleted",
    "memory.updated",
    "extraction.switch_set",
    "connector.deleted",
    "store.updated",
    "key.created",
    "key.updated",
    "key.revoked",
    "key.deleted",
    "proposal.applied",
    "proposal.rejected",
    "person.erased",
    "person.updated",
    "index.created",
    "index.deleted",
    "organisation.updated",
)


def audit_event_record(*, caller: Caller, action: str, target: str = "", details: dict | None = None) -> AuditEvent:
    """An event in the caller's organisation, naming the caller's actor: a key's id, the console's
    `console:<user>`, or the work or command that acts for the system."""
    return AuditEvent.objects.create(
        organisation_id=caller.organisation_id, actor=caller.actor, action=action, target=target, details=details or {}
    )


@transaction.atomic(durable=True)
def audit_retention_purge(*, now=None) -> int:
    """Delete each organisation's events older than its `audit_retention_days`.

    The database does it: `audit_retention_purge()` runs as the role `core_audit_purge`, the
    only one the append-only trigger lets delete, and removes only expired events at the start
    of each chain (audit/migrations/0003_hash_chain.py). `now` may lie in the past, never ahead.
    """
    with connection.cursor() as cursor:
        cursor.execute("SELECT audit_retention_purge(%s)", [now or timezone.now()])
        return cursor.fetchone()[0]


# --- erasing a person: her data leaves the events that are not about erasing her ---------------

SCRUBBED = "[erased]"
SEARCH_FIELDS = ("search", "q", "query")
ERASED = "person.erased"
# Where `person.erased` lists the events its erasure scrubbed: the database's scrub blanks only those.
SCRUBBED_EVENTS = "scrubbed_events"

# Her subject as a target or anywhere in the details; one of her ids (records, threads, turns) as
# the target, in the details' id lists, or as any string of the details.
_EVENTS_NAMING = """
    SELECT id, target, details FROM audit_auditevent
    WHERE organisation_id = %s AND action <> 'person.erased'
      AND (target = %s
           OR target = ANY(%s::text[])
           OR strpos(lower(details::text), lower(%s)) > 0
           OR EXISTS (SELECT 1 FROM jsonb_path_query(details, 'strict $.**') AS part
                      WHERE jsonb_typeof(part) = 'string' AND part #>> '{}' = ANY(%s::text[])))
    ORDER BY sequence
"""


def person_commitment(*, caller: Caller, subject: str) -> str:
    """How the log names a person it must not name in clear (the target of `person.erased`): an
    HMAC of the organisation and her subject under the server's secret. Whoever holds the
    secret can tell whether a given person was erased; the log alone cannot tell who was."""
    digest = salted_hmac("core.audit.person", f"{caller.organisation_id}\n{subject}", algorithm="sha256").hexdigest()
    return f"hmac-sha256:{digest}"


def _paths_naming(*, details, subject: str, ids: set[str], about_her: bool) -> list[list[str]]:
    """The JSON paths in `details` to blank: every string that is her subject or one of her ids,
    and every search term that contains her subject or was typed on a page that showed her (her
    subject or her ids among its results)."""
    folded = subject.casefold()
    naming: list[list[str]] = []
    searches: list[tuple[list[str], str]] = []
    pending: list[tuple[list[str], object, str | None]] = [([], details, None)]
    while pending:
        path, value, name = pending.pop()
        if isinstance(value, dict):
            pending.extend((path + [key], inner, key) for key, inner in value.items())
        elif isinstance(value, list):
            pending.extend((path + [str(position)], inner, name) for position, inner in enumerate(value))
        elif isinstance(value, str) and value and value != SCRUBBED:
            if value.casefold() == folded or value in ids:
                naming.append(path)
            elif name in SEARCH_FIELDS:
                searches.append((path, value))
    about_her = about_her or bool(naming)
    naming += [path for path, term in searches if about_her or folded in term.casefold()]
    return sorted(naming)


def _scrub_plan(*, caller: Caller, subject: str, ids) -> list[tuple[str, bool, list[list[str]]]]:
    """(event id, blank the target, detail paths to blank) for each event of the organisation,
    but the erasures', that names her: her subject or one of her ids as its target or in its
    details (its search terms then go too)."""
    ids = set(ids)
    needle = json.dumps(subject, ensure_ascii=False)[1:-1]  # as her subject reads inside jsonb's text
    with connection.cursor() as cursor:
        cursor.execute(_EVENTS_NAMING, [caller.organisation_id, subject, sorted(ids), needle, sorted(ids)])
        rows = cursor.fetchall()
    plan = []
    for event_id, target, details in rows:
        details = json.loads(details) if isinstance(details, str) else details
        blank_target = target == subject or target in ids
        paths = _paths_naming(details=details, subject=subject, ids=ids, about_her=blank_target)
        if blank_target or paths:
            plan.append((event_id, blank_target, paths))
    return plan


def _path_literal(path: list[str]) -> str:
    """A path as PostgreSQL's text[] literal, each element quoted."""
    return "{" + ",".join('"' + part.replace("\\", "\\\\").replace('"', '\\"') + '"' for part in path) + "}"


def person_erasure_audit(*, caller: Caller, subject: str, ids, receipt: dict) -> AuditEvent:
    """Records her erasure as `person.erased` — her by a commitment, not in clear; its details the
    receipt, with `audit_events_scrubbed` counted, and the ids of the events scrubbed — then blanks
    her in those events: the target that names her or one of her `ids` (records, threads, turns),
    those strings and the search terms about her in their details. The database's
    `audit_event_scrub` does it, only for events this erasure lists, and can only blank; the
    chains still verify (audit.chain)."""
    plan = _scrub_plan(caller=caller, subject=subject, ids=ids)
    details = {**receipt, "audit_events_scrubbed": len(plan), SCRUBBED_EVENTS: [event_id for event_id, _, _ in plan]}
    erasure = audit_event_record(
        caller=caller, action=ERASED,
        target=person_commitment(caller=caller, subject=subject), details=details,
    )
    with connection.cursor() as cursor:
        for event_id, blank_target, paths in plan:
            cursor.execute(
                "SELECT audit_event_scrub(%s, %s, %s, %s::text[])",
                [event_id, erasure.id, blank_target, [_path_literal(path) for path in paths]],
            )
    return erasure


def person_audit_counted(*, caller: Caller, subject: str, ids) -> int:
    """How many events erasing her would scrub now."""
    return len(_scrub_plan(caller=caller, subject=subject, ids=ids))
