"""Checking the audit log's hash chains (tamper-evident).

PostgreSQL chains and dates each event as it is inserted (audit/migrations/0003_hash_chain.py,
0004_time_and_scrubbing.py): its `sequence` counts up from 1 per organisation, `at` is the
database's clock, and `hash` is SHA-256 over the length-prefixed parts below, `previous_hash`
first, with target and details as salted commitments. This module recomputes the digests
independently of the database's functions and walks each chain: an event changed, removed or
inserted out of turn, a time earlier than the event before it, or a chain cut short at either
end, shows as a problem. A target or details blanked by an erasure's scrub has lost its salt:
its commitment still holds the chain, its value can no longer be checked, and the event is
counted as `scrubbed` — when the `person.erased` event it names as `scrubbed_by` comes later in
the chain and lists it (that list is covered by the chain); any other scrub is a problem. What the chain cannot show is a chain a superuser rewrote whole; the
heads it reports can be kept elsewhere to catch that too.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime, timezone

from django.db import connection

GENESIS_HASH = "0" * 64


def _timestamp(at: datetime) -> str:
    at = at.astimezone(timezone.utc)
    return f"{at.year:04d}-{at.month:02d}-{at.day:02d}T{at.hour:02d}:{at.minute:02d}:{at.second:02d}.{at.microsecond:06d}"


def _digest(*parts: str) -> str:
    payload = "".join(f"{len(part.encode())}:{part}" for part in parts)
    return hashlib.sha256(payload.encode()).hexdigest()


def commitment(*, salt: str, value: str) -> str:
    """The commitment to a target or a details text (its jsonb text) that the chain covers."""
    return _digest(salt, value)


def event_digest(
    *,
    organisation_id: str,
    sequence: int,
    previous_hash: str,
    at: datetime,
    actor: str,
    action: str,
    target_commitment: str,
    details_commitment: str,
) -> str:
    """The digest of one link."""
    return _digest(previous_hash, organisation_id, str(sequence), _timestamp(at), actor, action, target_commitment, details_commitment)


@dataclass
class ChainReport:
    organisation_id: str
    events: int = 0
    first_sequence: int | None = None
    last_sequence: int | None = None
    head_sequence: int = 0
    head_hash: str = GENESIS_HASH
    purged_through: int = 0
    scrubbed: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def intact(self) -> bool:
        return not self.problems

    def as_dict(self) -> dict:
        return {
            "organisation_id": self.organisation_id,
            "intact": self.intact,
            "events": self.events,
            "first_sequence": self.first_sequence,
            "last_sequence": self.last_sequence,
            "head_sequence": self.head_sequence,
            "head_hash": self.head_hash,
            "purged_through": self.purged_through,
            "scrubbed": self.scrubbed,
            "problems": self.problems,
        }


# Reads go through SQL: the chain is checked against the rows as stored, `details` as its
# jsonb text, which is what the database's digest covered.
_EVENTS = """
    SELECT id, sequence, previous_hash, hash, at, actor, action, target, details::text,
        target_salt, details_salt, target_commitment, details_commitment, scrubbed_at, scrubbed_by
    FROM audit_auditevent WHERE organisation_id = %s ORDER BY sequence NULLS FIRST, id
"""
_HEADS = "SELECT organisation_id, sequence, hash, purged_through, time_ordered_from, scrubs_named_from FROM audit_auditchainhead"
_ORGANISATIONS = "SELECT DISTINCT organisation_id FROM audit_auditevent"


ERASED = "person.erased"


def _listed(details_text: str) -> set[str]:
    """The events an erasure's details list as scrubbed by it."""
    try:
        listed = json.loads(details_text).get("scrubbed_events")
    except (ValueError, AttributeError):
        return set()
    return {each for each in listed if isinstance(each, str)} if isinstance(listed, list) else set()


def _scrubs_check(*, report: ChainReport, scrubs: list[tuple[str, int, str | None]], erasures: dict[str, tuple[int, set[str]]]) -> None:
    """Each scrub (event id, sequence, the erasure it names) must be by a later erasure that lists it."""
    for event_id, sequence, erasure_id in scrubs:
        erasure = erasures.get(erasure_id)
        if erasure is None or erasure[0] <= sequence or event_id not in erasure[1]:
            report.problems.append(f"{event_id}: scrubbed, but no later erasure names it")
        else:
            report.scrubbed += 1


def audit_chains_verify(*, organisation_id: str | None = None) -> list[ChainReport]:
    """One report per organisation that has events or a chain head (or just the one named)."""
    with connection.cursor() as cursor:
        cursor.execute(_HEADS)
        heads = {row[0]: row[1:] for row in cursor.fetchall()}
        cursor.execute(_ORGANISATIONS)
        organisations = sorted(set(heads) | {row[0] for row in cursor.fetchall()})
    if organisation_id is not None:
        organisations = [organisation_id]
    return [_chain_verify(organisation_id=each, head=heads.get(each)) for each in organisations]


def _chain_verify(*, organisation_id: str, head) -> ChainReport:
    report = ChainReport(organisation_id=organisation_id)
    time_ordered_from, scrubs_named_from = 1, None
    if head is None:
        report.problems.append("no chain head")
    else:
        report.head_sequence, report.head_hash, report.purged_through, time_ordered_from, scrubs_named_from = head
    with connection.cursor() as cursor:
        cursor.execute(_EVENTS, [organisation_id])
        rows = cursor.fetchall()
    scrubs: list[tuple[str, int, str | None]] = []
    erasures: dict[str, tuple[int, set[str]]] = {}
    expected_sequence = report.purged_through + 1
    expected_previous = None  # unknown across a purge: the first kept event names a removed one
    previous_at = None
    for row in rows:
        event_id, sequence, previous_hash, stored_hash, at, actor, action, target, details_text = row[:9]
        target_salt, details_salt, target_commitment, details_commitment, scrubbed_at, scrubbed_by = row[9:]
        report.events += 1
        if sequence is None:
            report.problems.append(f"{event_id}: not chained")
            continue
        if report.first_sequence is None:
            report.first_sequence = sequence
            if report.purged_through == 0:
                expected_previous = GENESIS_HASH
        if sequence != expected_sequence:
            report.problems.append(f"{event_id}: sequence {sequence} where {expected_sequence} was due (events missing or out of turn)")
        elif expected_previous is not None and previous_hash != expected_previous:
            report.problems.append(f"{event_id}: does not follow the event before it")
        if sequence >= time_ordered_from and previous_at is not None and at < previous_at:
            report.problems.append(f"{event_id}: dated before the event before it (back-dated)")
        previous_at = at
        digest = event_digest(
            organisation_id=organisation_id,
            sequence=sequence,
            previous_hash=previous_hash,
            at=at,
            actor=actor,
            action=action,
            target_commitment=target_commitment,
            details_commitment=details_commitment,
        )
        opened = [(target_salt, target, target_commitment), (details_salt, details_text, details_commitment)]
        if digest != stored_hash or any(
            salt is not None and commitment(salt=salt, value=value) != committed for salt, value, committed in opened
        ):
            report.problems.append(f"{event_id}: changed since it was written")
        elif target_salt is None or details_salt is None:
            if scrubbed_at is None:
                report.problems.append(f"{event_id}: a salt is gone but the event was never scrubbed")
            elif scrubs_named_from is not None and scrubbed_at < scrubs_named_from:
                report.scrubbed += 1  # scrubbed before scrubs named their erasure
            else:
                scrubs.append((event_id, sequence, scrubbed_by))
        if action == ERASED:
            erasures[event_id] = (sequence, _listed(details_text))
        report.last_sequence = sequence
        expected_sequence = sequence + 1
        expected_previous = stored_hash
    _scrubs_check(report=report, scrubs=scrubs, erasures=erasures)
    if head is not None:
        if (report.last_sequence or report.purged_through) != report.head_sequence:
            report.problems.append(f"the chain ends at {report.last_sequence} but its head is at {report.head_sequence} (newest events missing)")
        elif rows and expected_previous != report.head_hash:
            report.problems.append("the newest event is not the chain's head")
    return report
