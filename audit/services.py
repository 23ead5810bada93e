"""Writing and purging audit events. Callers write events inside their own transaction."""
from __future__ import annotations

import json

from django.db import connection, transaction
from django.utils import timezone

from audit.models import AuditEvent

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


def audit_event_record(*, organisation_id: str, actor: str, action: str, target: str = "", details: dict | None = None) -> AuditEvent:
    return AuditEvent.objects.create(
        organisation_id=organisation_id, actor=actor, action=action, target=target, details=details or {}
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

_EVENTS_NAMING = """
    SELECT id, target, details FROM audit_auditevent
    WHERE organisation_id = %s AND action NOT LIKE 'person.%%'
      AND (target = %s
           OR strpos(lower(details::text), lower(%s)) > 0
           OR details -> 'record_ids' ?| %s::text[]
           OR details -> 'thread_ids' ?| %s::text[])
    ORDER BY sequence
"""


def _paths_naming(*, details, subject: str, about_her: bool) -> list[list[str]]:
    """The JSON paths in `details` to blank: every string that is her subject, and every search
    term that contains it or was typed on a page that showed her (her records, her threads, or
    her subject among its results)."""
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
            if value.casefold() == folded:
                naming.append(path)
            elif name in SEARCH_FIELDS:
                searches.append((path, value))
    about_her = about_her or bool(naming)
    naming += [path for path, term in searches if about_her or folded in term.casefold()]
    return sorted(naming)


def _scrub_plan(*, organisation_id: str, subject: str, record_ids, thread_ids) -> list[tuple[str, bool, list[list[str]]]]:
    """(event id, blank the target, detail paths to blank) for each event of the organisation,
    but her `person.*` events, that names her: as its target, in its details, or by showing
    her records or threads (its search terms then go)."""
    record_ids, thread_ids = set(record_ids), set(thread_ids)
    needle = json.dumps(subject, ensure_ascii=False)[1:-1]  # as her subject reads inside jsonb's text
    with connection.cursor() as cursor:
        cursor.execute(_EVENTS_NAMING, [organisation_id, subject, needle, sorted(record_ids), sorted(thread_ids)])
        rows = cursor.fetchall()
    plan = []
    for event_id, target, details in rows:
        details = json.loads(details) if isinstance(details, str) else details
        shown = isinstance(details, dict) and (
            record_ids & set(_strings(details.get("record_ids"))) or thread_ids & set(_strings(details.get("thread_ids")))
        )
        blank_target = target == subject
        paths = _paths_naming(details=details, subject=subject, about_her=bool(blank_target or shown))
        if blank_target or paths:
            plan.append((event_id, blank_target, paths))
    return plan


def _strings(value) -> list[str]:
    return [each for each in value if isinstance(each, str)] if isinstance(value, list) else []


def _path_literal(path: list[str]) -> str:
    """A path as PostgreSQL's text[] literal, each element quoted."""
    return "{" + ",".join('"' + part.replace("\\", "\\\\").replace('"', '\\"') + '"' for part in path) + "}"


def person_audit_scrub(*, organisation_id: str, subject: str, record_ids, thread_ids) -> int:
    """Blanks her in the organisation's events other than `person.*` (erasure): the target that
    names her, her subject and the search terms about her in their details. The database's
    `audit_event_scrub` does it, and can only blank; the chains still verify (audit.chain).
    Answers how many events were scrubbed."""
    plan = _scrub_plan(organisation_id=organisation_id, subject=subject, record_ids=record_ids, thread_ids=thread_ids)
    with connection.cursor() as cursor:
        for event_id, blank_target, paths in plan:
            cursor.execute("SELECT audit_event_scrub(%s, %s, %s::text[])", [event_id, blank_target, [_path_literal(path) for path in paths]])
    return len(plan)


def person_audit_counted(*, organisation_id: str, subject: str, record_ids, thread_ids) -> int:
    """How many events `person_audit_scrub` would scrub now."""
    return len(_scrub_plan(organisation_id=organisation_id, subject=subject, record_ids=record_ids, thread_ids=thread_ids))
