from __future__ import annotations

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

from audit.services import audit_event_record
from core_memory.base.callers import Caller
from core_memory.base.errors import NotFound, PermissionDenied, Unprocessable
from core_memory.llm.configuration import IN_PROCESS_EMBEDDING_MODEL
from core_memory.llm.embedding_models import embedding_model_get
from core_memory.llm.embeddings import PGVECTOR_MISSING, embeddings_enabled, pgvector_installed
from core_memory.llm.rerank_models import rerank_model_get
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


def index_models_check(*, organisation: Organisation, changes: dict) -> None:
    """The embedding and rerank models named are offered to the organisation: else 422 naming the field."""
    if changes.get("embedding_model") is not None:
        embedding_model_get(organisation=organisation, model_id=changes["embedding_model"])
    if changes.get("rerank_model") is not None:
        rerank_model_get(organisation=organisation, model_id=changes["rerank_model"])


@transaction.atomic(durable=True)
def index_create(
    *,
    organisation: Organisation,
    caller: Caller,
    name: str,
    embeddings: bool = False,
    conversation: bool = False,
    embedding_model: str | None = None,
    rerank_model: str | None = None,
    rerank_depth: int = 50,
) -> KnowledgeIndex:
    """An index with `pipeline: memory` and its store with every section at its default.
    `embedding_model` (default: the model inside Core) and `rerank_model` must be offered to the
    organisation."""
    index_embeddings_check(embeddings=embeddings)
    models = {"embedding_model": embedding_model, "rerank_model": rerank_model}
    index_models_check(organisation=organisation, changes=models)
    index = KnowledgeIndex.objects.create(
        organisation=organisation, name=name, embeddings=embeddings, conversation=conversation,
        embedding_model=embedding_model or IN_PROCESS_EMBEDDING_MODEL, rerank_model=rerank_model, rerank_depth=rerank_depth,
    )
    MemoryStore.objects.create(index=index)
    details = {"name": name, **{field: value for field, value in models.items() if value is not None}}
    audit_event_record(caller=caller, action="index.created", target=index.id, details=details)
    return index


@transaction.atomic(durable=True)
def index_update(*, caller: Caller, index: KnowledgeIndex, changes: dict) -> tuple[KnowledgeIndex, bool]:
    """Renames the index, switches its embeddings or changes its models (`name`, `embeddings`,
    `embedding_model`, `rerank_model`, `rerank_depth`); audited as `index.updated` with what
    changed. Answers the index and whether embeddings were switched on now (its records then need
    their vectors: the caller starts the backfill).

    A new `embedding_model` of an index that embeds becomes its `embedding_model_next`: its
    searches keep the vectors they have until the next model's are complete (the caller starts
    that work, memory.embedding.switching). Asking for the model it has stops a switch."""
    locked = KnowledgeIndex.objects.for_organisation(index.organisation_id).live().select_for_update().filter(pk=index.pk).first()
    if locked is None:
        raise NotFound("No such index.", param="index_id")
    if "embeddings" in changes:
        index_embeddings_check(embeddings=changes["embeddings"])
    index_models_check(organisation=locked.organisation, changes=changes)
    changes = _embedding_model_switched(locked, changes)
    changed = {name: value for name, value in changes.items() if getattr(locked, name) != value}
    switched_on = changed.get("embeddings") is True
    if changed:
        for name, value in changed.items():
            setattr(locked, name, value)
        locked.save(update_fields=list(changed))
        audit_event_record(caller=caller, action="index.updated", target=locked.id, details=changed)
    return locked, switched_on


def _embedding_model_switched(index: KnowledgeIndex, changes: dict) -> dict:
    """The changes with a new embedding model of an index that keeps embedding turned into its next
    model; one that does not embed (or starts to now) takes the model at once."""
    model = changes.get("embedding_model")
    if model is None:
        return changes
    changes = dict(changes)
    embeds_before, embeds_after = index.embeddings, changes.get("embeddings", index.embeddings)
    if embeds_before and embeds_after:
        del changes["embedding_model"]
        changes["embedding_model_next"] = None if model == index.embedding_model else model
    else:
        changes["embedding_model_next"] = None
    return changes


@transaction.atomic(durable=True)
def index_delete(*, caller: Caller, index: KnowledgeIndex) -> None:
    """Marks the index deleted: it and everything in it are unavailable at once."""
    updated = (
        KnowledgeIndex.objects.for_organisation(index.organisation_id).live().filter(pk=index.pk).update(deleted_at=timezone.now())
    )
    if updated:
        audit_event_record(caller=caller, action="index.deleted", target=index.id)


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
def store_update(*, caller: Caller, store: MemoryStore, sections: dict, may_promote: bool) -> MemoryStore:
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
        caller=caller,
        action="store.updated",
        target=locked.index_id,
        details={"sections": sorted(complete)},
    )
    return locked
