from django.db import models
from django.utils.translation import gettext_lazy as _

from core_memory.base.ids import PrefixedIdField


class KnowledgeIndexQuerySet(models.QuerySet):
    def live(self):
        return self.filter(deleted_at__isnull=True)


class KnowledgeIndex(models.Model):
    class Pipeline(models.TextChoices):
        MEMORY = "memory", _("memory")

    id = PrefixedIdField("idx")
    organisation = models.ForeignKey("organisations.Organisation", on_delete=models.CASCADE, related_name="indexes")
    name = models.CharField(_("name"), max_length=200)
    pipeline = models.CharField(_("pipeline"), max_length=32, choices=Pipeline.choices, default=Pipeline.MEMORY)
    embeddings = models.BooleanField(_("embeddings"), default=False)
    deleted_at = models.DateTimeField(_("deleted at"), null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = KnowledgeIndexQuerySet.as_manager()

    class Meta:
        verbose_name = _("knowledge index")
        verbose_name_plural = _("knowledge indexes")
        indexes = [models.Index(fields=["organisation", "-id"], name="index_org_id")]

    def __str__(self) -> str:
        return f"{self.name} ({self.id})"


def default_injection() -> dict:
    return {
        "token_budget": None,
        "organisation_share": 0.4,
        "rank": "confidence",
        "episodes_limit": 0,
        "commitments": {"inject_limit": 5},
    }


def default_lessons() -> dict:
    return {"enabled": False, "min_episodes": 3}


def default_promotion() -> dict:
    return {"enabled": False, "labels": {}}


def default_maintenance() -> dict:
    return {"enabled": True}


SECTION_DEFAULTS = {
    "injection": default_injection,
    "lessons": default_lessons,
    "promotion": default_promotion,
    "maintenance": default_maintenance,
}


class MemoryStore(models.Model):
    """The memory settings of one index (R-4.3); each section is replaced whole."""

    index = models.OneToOneField(KnowledgeIndex, on_delete=models.CASCADE, primary_key=True, related_name="store")
    injection = models.JSONField(_("injection"), default=default_injection)
    lessons = models.JSONField(_("lessons"), default=default_lessons)
    promotion = models.JSONField(_("promotion"), default=default_promotion)
    maintenance = models.JSONField(_("maintenance"), default=default_maintenance)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = _("memory store")
        verbose_name_plural = _("memory stores")

    def __str__(self) -> str:
        return str(self.index_id)
