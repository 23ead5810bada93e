from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from audit.services import audit_event_record
from core_memory.organisations.models import Organisation
from stores.models import KnowledgeIndex, MemoryStore


@transaction.atomic(durable=True)
def index_create(*, organisation: Organisation, actor: str, name: str, embeddings: bool = False) -> KnowledgeIndex:
    """An index with `pipeline: memory` and its store with every section at its default (R-4.1)."""
    index = KnowledgeIndex.objects.create(organisation=organisation, name=name, embeddings=embeddings)
    MemoryStore.objects.create(index=index)
    audit_event_record(organisation=organisation, actor=actor, action="index.created", target=index.id, details={"name": name})
    return index


@transaction.atomic(durable=True)
def index_delete(*, index: KnowledgeIndex, actor: str) -> None:
    """Marks the index deleted: it and everything in it are unavailable at once (R-4.1)."""
    updated = KnowledgeIndex.objects.filter(pk=index.pk, deleted_at__isnull=True).update(deleted_at=timezone.now())
    if updated:
        audit_event_record(organisation=index.organisation_id, actor=actor, action="index.deleted", target=index.id)
