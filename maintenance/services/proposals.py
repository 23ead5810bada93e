"""Deciding proposals and erasing those resting on a person.

Applying writes a new shared record of nobody in particular — the proposal's type and text,
the store's promotion `labels` as its metadata, source `promotion`, no provenance — and leaves
the persons' own records theirs. A shared record with the same text already there is confirmed
instead, as any write of the same words is. Applying and rejecting are audited (`proposal.applied`, `proposal.rejected`)
in the same transaction; a decided proposal stays, so its records are never proposed again.
A console administrator may first change its type, text and confidence (checked as a record's
write is; `proposal.edited`, with what it said before), and decide several proposals at once.
"""
from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone
from django.utils.translation import gettext

from audit.services import audit_event_record
from core_memory.base.callers import Caller
from core_memory.base.errors import Conflict, InvalidRequest, NotFound
from maintenance.models import Proposal, ProposalSource
from maintenance.selectors import proposals_resting_only_on
from memory.answers import record_fields_checked
from memory.models import MemoryRecord
from memory.services.rules import record_write_authorise, text_check, type_check
from memory.services.writes import RecordDraft, record_write_by_core_within
from stores.models import KnowledgeIndex, MemoryStore

# What an administrator may change of a proposal before applying it.
PROPOSAL_CHANGEABLE = ("type", "text", "confidence")


def proposal_apply(*, caller: Caller, proposal_id: str, now: datetime | None = None) -> Proposal:
    """`POST /v1/memory/proposals/{id}/apply` by a key's caller: a proposal of an index available
    to its key (404 otherwise), which the key's policy lets it write (403 and `memory.write_denied`)."""
    _caller_may_decide(caller=caller, proposal_id=proposal_id)
    return _proposal_decide(proposals=Proposal.objects.for_key(caller.key), proposal_id=proposal_id, caller=caller, apply=True, now=now)


def proposal_reject(*, caller: Caller, proposal_id: str, now: datetime | None = None) -> Proposal:
    """`POST /v1/memory/proposals/{id}/reject` by a key's caller, with the rights of `proposal_apply`."""
    _caller_may_decide(caller=caller, proposal_id=proposal_id)
    return _proposal_decide(proposals=Proposal.objects.for_key(caller.key), proposal_id=proposal_id, caller=caller, apply=False, now=now)


def proposal_apply_by_administrator(
    *, caller: Caller, proposal_id: str, changes: dict | None = None, now: datetime | None = None
) -> Proposal:
    """A console administrator (`Caller.console`) applies a proposal of her organisation; with
    `changes` (its `type`, `text`, `confidence`) as she edited them first (`proposal_changes`)."""
    return _proposal_decide(
        proposals=_organisations_proposals(caller), proposal_id=proposal_id, caller=caller, apply=True, now=now, changes=changes
    )


def proposal_reject_by_administrator(*, caller: Caller, proposal_id: str, now: datetime | None = None) -> Proposal:
    """A console administrator (`Caller.console`) rejects a proposal of her organisation."""
    return _proposal_decide(proposals=_organisations_proposals(caller), proposal_id=proposal_id, caller=caller, apply=False, now=now)


@transaction.atomic(durable=True)
def proposals_decide_by_administrator(*, caller: Caller, proposal_ids: Sequence[str], apply: bool, now: datetime | None = None) -> list[Proposal]:
    """A console administrator's (`Caller.console`) one decision on several proposals: each applied
    (or rejected) and audited as on its own, all of them or, on an error (one already decided,
    another organisation's), none."""
    proposals = _organisations_proposals(caller)
    # In a fixed order, so that two decisions on overlapping proposals lock them the same way round.
    return [
        _proposal_decide_within(proposals=proposals, proposal_id=proposal_id, caller=caller, apply=apply, now=now)
        for proposal_id in sorted(set(proposal_ids))
    ]


def proposal_changes(*, caller: Caller, proposal_id: str, changes: dict) -> dict[str, tuple]:
    """What `changes` would change of a pending proposal of the administrator's organisation, as
    `{field: (now, then)}`, checked as applying checks them (a record's write: its text, a type the
    store knows, a confidence from 0 to 1); an ApplicationError naming the field otherwise."""
    proposal = _organisations_proposals(caller).select_related("index").filter(pk=proposal_id).first()
    if proposal is None:
        raise NotFound("No such proposal.")
    return {field: (getattr(proposal, field), value) for field, value in _changes_checked(proposal=proposal, changes=changes).items()}


def _organisations_proposals(caller: Caller) -> QuerySet[Proposal]:
    return Proposal.objects.for_organisation(caller.whole_organisation_id).live()


def _changes_checked(*, proposal: Proposal, changes: dict) -> dict:
    """The changes that differ from the proposal, each checked; an unknown field is refused."""
    unknown = sorted(set(changes) - set(PROPOSAL_CHANGEABLE))
    if unknown:
        raise InvalidRequest(gettext("Only the type, text and confidence of a proposal can be changed."), param=unknown[0])
    checked = record_fields_checked(changes)
    if "text" in checked:
        text_check(checked["text"])
    if checked.get("type", proposal.type) != proposal.type:
        type_check(index=proposal.index, type_name=checked["type"])
    return {field: value for field, value in checked.items() if value != getattr(proposal, field)}


def _caller_may_decide(*, caller: Caller, proposal_id: str) -> None:
    key = caller.key
    proposal = Proposal.objects.for_key(key).filter(pk=proposal_id).first()
    if proposal is None:
        raise NotFound("No such proposal.")
    index = KnowledgeIndex.objects.for_key(key).get(pk=proposal.index_id)
    # Deciding changes what the store shares: the write right, as for writing a record.
    record_write_authorise(caller=caller, index=index, param=None)


@transaction.atomic(durable=True)
def _proposal_decide(
    *, proposals: QuerySet[Proposal], proposal_id: str, caller: Caller, apply: bool, now: datetime | None, changes: dict | None = None
) -> Proposal:
    return _proposal_decide_within(proposals=proposals, proposal_id=proposal_id, caller=caller, apply=apply, now=now, changes=changes)


def _proposal_decide_within(
    *, proposals: QuerySet[Proposal], proposal_id: str, caller: Caller, apply: bool, now: datetime | None, changes: dict | None = None
) -> Proposal:
    proposal = proposals.select_for_update(of=("self",)).select_related("index").filter(pk=proposal_id).first()
    if proposal is None:
        raise NotFound("No such proposal.")
    if proposal.status != Proposal.Status.PENDING:
        raise Conflict(gettext("This proposal was already %(status)s.") % {"status": proposal.get_status_display()})
    if changes:
        _proposal_change(caller=caller, proposal=proposal, changes=changes)
    now = now or timezone.now()
    details: dict = {"index_id": proposal.index_id}
    if apply:
        store = MemoryStore.objects.for_organisation(proposal.organisation_id).get(index_id=proposal.index_id)
        result = record_write_by_core_within(
            caller=caller,
            index_id=proposal.index_id,
            subject=None,
            now=now,
            draft=RecordDraft(
                type=proposal.type,
                text=proposal.text,
                metadata=dict((store.promotion or {}).get("labels") or {}),
                confidence=proposal.confidence,
                source=MemoryRecord.Source.PROMOTION,
            ),
        )
        proposal.applied_record = result.record
        details |= {"memory_id": result.record.pk, "write": result.status}
    proposal.status = Proposal.Status.APPLIED if apply else Proposal.Status.REJECTED
    proposal.decided_by = caller.actor[:200]
    proposal.decided_at = now
    proposal.save(update_fields=["status", "applied_record", "decided_by", "decided_at"])
    audit_event_record(
        caller=caller,
        action="proposal.applied" if apply else "proposal.rejected",
        target=proposal.pk,
        details=details,
    )
    return proposal


def _proposal_change(*, caller: Caller, proposal: Proposal, changes: dict) -> None:
    """The administrator's edit before applying: the proposal keeps what was applied, the audit
    event (`proposal.edited`) what it said before."""
    changed = _changes_checked(proposal=proposal, changes=changes)
    if not changed:
        return
    before = {field: getattr(proposal, field) for field in changed}
    for field, value in changed.items():
        setattr(proposal, field, value)
    proposal.save(update_fields=list(changed))
    audit_event_record(
        caller=caller, action="proposal.edited", target=proposal.pk,
        details={"fields": list(changed), "before": before},
    )


def person_proposals_erase(*, caller: Caller, subject: str) -> int:
    """Part of erasing her: every proposal that rests only on her records goes (applied
    ones too; the shared record an applied one wrote is nobody's and stays). A proposal that
    also rests on another person's record stays, without her record, its text taken from one
    of theirs. Answers how many proposals went. Call it before her records are erased."""
    only_hers = set(proposals_resting_only_on(caller=caller, subject=subject).values_list("pk", flat=True))
    hers = ProposalSource.objects.for_organisation(caller.organisation_id).filter(record__subject=subject)
    shared_with_others = set(hers.values_list("proposal_id", flat=True)) - only_hers
    hers.delete()
    # The text of a proposal that stays may be her words: it takes a colleague's (the same, normalised).
    remaining = {
        source.proposal_id: source.record
        for source in ProposalSource.objects.for_organisation(caller.organisation_id)
        .filter(proposal_id__in=shared_with_others)
        .select_related("record")
        .order_by("-record_id")
    }
    for proposal in Proposal.objects.for_organisation(caller.organisation_id).filter(pk__in=remaining):
        proposal.text = remaining[proposal.pk].text
        proposal.save(update_fields=["text"])
    _, deleted = Proposal.objects.for_organisation(caller.organisation_id).filter(pk__in=only_hers).delete()
    return deleted.get(Proposal._meta.label, 0)
