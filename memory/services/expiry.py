"""Ending records whose time ran out: an expired record is already left out of every read
(memory.models.unexpired); once a grace period has passed (in which a correction of its
`expires_at` can still save it) maintenance ends it, as a correction ends the record it
replaces: audited, told to webhooks, its vector gone."""
from __future__ import annotations

from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from core_memory.base.callers import Caller
from memory.models import MemoryRecord
from memory.services.changes import record_retire

ACTOR = "core:maintenance"
# Records ended per transaction: a backlog after downtime is worked off in short transactions.
CHUNK = 500


def records_expired_end(*, grace: timedelta, now: datetime | None = None) -> int:
    """Ends every active record of every organisation whose `expires_at` lies more than `grace`
    before `now`; answers how many. Each one: status `ended`, a version "expired by
    core:maintenance", a `memory.expired` audit event, a `record.updated` webhook event."""
    cutoff = (now or timezone.now()) - grace
    ended = 0
    while True:
        count = _chunk_end(cutoff=cutoff)
        ended += count
        if count < CHUNK:
            return ended


@transaction.atomic(durable=True)
def _chunk_end(*, cutoff: datetime) -> int:
    due = (
        MemoryRecord.objects.unscoped()
        .select_for_update(of=("self",), skip_locked=True)
        .select_related("index")
        .filter(status=MemoryRecord.Status.ACTIVE, expires_at__lt=cutoff)
        .order_by("pk")[:CHUNK]
    )
    records = list(due)
    for record in records:
        record_retire(
            record=record, status=MemoryRecord.Status.ENDED, caller=Caller.system(organisation_id=record.organisation_id, actor=ACTOR), what="expired", action="memory.expired", kind="record.updated",
            details={"index_id": record.index_id, "expires_at": record.expires_at.isoformat()},
        )
    return len(records)
