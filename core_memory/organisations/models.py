from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils.translation import gettext_lazy as _

from core_memory.base.ids import PrefixedIdField
from core_memory.base.tenancy import organisation_id_of

ORGANISATION_CAPABILITIES = ("improvements",)
# The most requests per minute an organisation may allow each key (the API and the console alike).
RATE_LIMIT_MOST = 1_000_000


def configured_model_ids() -> list[str]:
    """The ids of CORE_MODELS, in their configured order."""
    return [model["id"] for model in settings.CORE_MODELS]


def configured_embedding_model_ids() -> list[str]:
    """The ids of CORE_EMBEDDING_MODELS (the models served elsewhere), in their configured order."""
    return [model["id"] for model in settings.CORE_EMBEDDING_MODELS]


def configured_rerank_model_ids() -> list[str]:
    """The ids of CORE_RERANK_MODELS, in their configured order."""
    return [model["id"] for model in settings.CORE_RERANK_MODELS]


def _offered(configured: list[str], chosen: list[str] | None) -> list[str]:
    return configured if chosen is None else [model_id for model_id in configured if model_id in chosen]


def default_improvements() -> dict:
    return {"enabled": False}


class OrganisationQuerySet(models.QuerySet):
    """An organisation is its own tenant: its rows "of an organisation" are itself, so code that
    limits any model to one organisation (the console's admin) limits this one the same way."""

    def for_organisation(self, organisation):
        return self.filter(pk=organisation_id_of(organisation))

    def unscoped(self):
        return self.all()


class Organisation(models.Model):
    id = PrefixedIdField("org")
    name = models.CharField(_("name"), max_length=200)
    timezone = models.CharField(_("time zone"), max_length=64, default="UTC")
    capabilities = models.JSONField(_("capabilities"), default=list, blank=True)
    # null: every model in CORE_MODELS is offered.
    offered_models = models.JSONField(_("offered models"), null=True, blank=True)
    # null: every model in CORE_EMBEDDING_MODELS (the in-process model is offered always), and in CORE_RERANK_MODELS.
    offered_embedding_models = models.JSONField(_("offered embedding models"), null=True, blank=True)
    offered_rerank_models = models.JSONField(_("offered rerank models"), null=True, blank=True)
    helper_model = models.CharField(_("helper model"), max_length=200, null=True, blank=True)
    monthly_token_limit = models.BigIntegerField(_("monthly token limit"), null=True, blank=True)
    audit_retention_days = models.PositiveIntegerField(_("audit retention (days)"), default=365)
    improvements = models.JSONField(_("improvements"), default=default_improvements, blank=True)
    # Requests per minute each of its keys may make; null: CORE_RATE_LIMIT_PER_MINUTE.
    rate_limit_per_minute = models.PositiveIntegerField(
        _("rate limit per key (requests per minute)"),
        null=True,
        blank=True,
        validators=[MinValueValidator(1), MaxValueValidator(RATE_LIMIT_MOST)],
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = OrganisationQuerySet.as_manager()

    class Meta:
        verbose_name = _("organisation")
        verbose_name_plural = _("organisations")
        constraints = [
            models.CheckConstraint(condition=models.Q(audit_retention_days__gte=1), name="organisation_retention_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.id})"

    def has_capability(self, capability: str) -> bool:
        return capability in (self.capabilities or [])

    def offered_model_ids(self) -> list[str]:
        return _offered(configured_model_ids(), self.offered_models)

    def offered_embedding_model_ids(self) -> list[str]:
        """The models of CORE_EMBEDDING_MODELS offered to it (the in-process model is offered always)."""
        return _offered(configured_embedding_model_ids(), self.offered_embedding_models)

    def offered_rerank_model_ids(self) -> list[str]:
        return _offered(configured_rerank_model_ids(), self.offered_rerank_models)

    def key_rate_limit_per_minute(self) -> int:
        """What each key of this organisation may ask per minute (its setting, else the server's)."""
        return self.rate_limit_per_minute or settings.CORE_RATE_LIMIT_PER_MINUTE
