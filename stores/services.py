from __future__ import annotations

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

from audit.services import audit_event_record
from core_memory.base.errors import NotFound, PermissionDenied, Unprocessable
from core_memory.llm.embeddings import PGVECTOR_MISSING, embeddings_enabled, pgvector_installed
from core_memory.organisations.models import Organisation
from stores.configuration import store_sections_normalise
from stores.models import KnowledgeIndex, MemoryStore


def index_embeddings_check(*, embeddings: bool) -> None:
    """An index that embeds, on a server that cannot keep vectors, is a 422 on `embeddings`:
    it would stop the next start-up (memory.embedding.storage). With CORE_EMBEDDINGS=off it
    is accepted and searched by full text."""
    if embeddings and embeddings_enabled() and not pgvector_installed():
        message = gettext("An index with embeddings cannot be created: %(reason)s") % {"reason": gettext(PGVECTOR_MISSING)}
        raise Unprocessable(message, param="embeddings")


@transaction.atomic(durable=True)
def index_create(
    *, organisation: Organisation, actor: str, name: str, embeddings: bool = False, conversation: bool = False
) -> KnowledgeIndex:
    """An index with `pipeline: memory` and its store with every section at its default."""
    index_embeddings_check(embeddings=embeddings)
    index = KnowledgeIndex.objects.create(organisation=organisation, name=name, embeddings=embeddings, conversation=conversation)
    MemoryStore.objects.create(index=index)
    audit_event_record(organisation_id=organisation.id, actor=actor, action="index.created", target=index.id, details={"name": name})
    return index


@transaction.atomic(durable=True)
def index_update(*, index: KnowledgeIndex, actor: str, changes: dict) -> tuple[KnowledgeIndex, bool]:
    """Renames the index or switches its embeddings (`name`, `embeddings`); audited as
    `index.updated` with what changed. Answers the index and whether embeddings were switched
    on now (its records then need their vectors: the caller starts the backfill)."""
    locked = KnowledgeIndex.objects.for_organisation(index.organisation_id).live().select_for_update().filter(pk=index.pk).first()
    if locked is None:
        raise NotFound("No such index.", param="index_id")
    if "embeddings" in changes:
        index_embeddings_check(embeddings=changes["embeddings"])
    changed = {name: value for name, value in changes.items() if getattr(locked, name) != value}
    switched_on = changed.get("embeddings") is True
    if changed:
        for name, value in changed.items():
            setattr(locked, name, value)
        locked.save(update_fields=list(changed))
        audit_event_record(organisation_id=locked.organisation_id, actor=actor, action="index.updated", target=locked.id, details=changed)
    return locked, switched_on


@transaction.atomic(durable=True)
def index_delete(*, index: KnowledgeIndex, actor: str) -> None:
    """Marks the index deleted: it and everything in it are unavailable at once."""
    updated = (
        KnowledgeIndex.objects.for_organisation(index.organisation_id).live().filter(pk=index.pk).update(deleted_at=timezone.now())
    )
    if updated:
        audit_event_record(organisation_id=index.organisation_id, actor=actor, action="index.deleted", target=index.id)


def store_sections_validate(*, organisation: Organisation, sections: dict, may_promote: bool) -> dict:
    """The sections sent, complete; raises ValidationError (shape) or PermissionDenied (promotion).

    `promotion` needs `may_promote` (a key with `management` and `memory`, or a console
    administrator) and an organisation with the capability `improvements`.
    """
    complete = store_sections_normalise(sections)
    if "promotion" in complete:
        if not may_promote:
            raise PermissionDenied(
                gettext("Only a key with the capabilities management and memory, or a console administrator, may set promotion."),
                param="promotion",
            )
        if not organisation.has_capability("improvements"):
            raise PermissionDenied(gettext("The organisation lacks the capability 'improvements'."), param="promotion")
    return complete


@transaction.atomic(durable=True)
def store_update(*, store: MemoryStore, sections: dict, actor: str, may_promote: bool) -> MemoryStore:
    """Replace each section sent, whole: a field left out returns to its default.

    Refused sections (store_sections_validate) write nothing, not even the other sections sent with them.
    """
    locked = (
        MemoryStore.objects.for_organisation(store.index.organisation_id)
        .select_for_update()
        .select_related("index__organisation")
        .get(pk=store.pk)
    )
    complete = store_sections_validate(organisation=locked.index.organisation, sections=sections, may_promote=may_promote)
    if not complete:
        return locked
    for name, value in complete.items():
        setattr(locked, name, value)
    locked.save(update_fields=[*complete, "updated_at"])
    audit_event_record(
        organisation_id=locked.index.organisation_id,
        actor=actor,
        action="store.updated",
        target=locked.index_id,
        details={"sections": sorted(complete)},
    )
    return locked
