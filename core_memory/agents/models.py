from django.db import models
from django.utils.translation import gettext_lazy as _

from core_memory.base.ids import PrefixedIdField
from core_memory.base.tenancy import TenantQuerySet


class AgentQuerySet(TenantQuerySet):
    def live(self):
        return self.filter(deleted_at__isnull=True)


class Agent(models.Model):
    """A named assistant of one organisation. Deleting marks it, so threads keep naming it."""

    id = PrefixedIdField("agt")
    organisation = models.ForeignKey("organisations.Organisation", on_delete=models.CASCADE, related_name="agents")
    name = models.CharField(_("name"), max_length=200)
    latest_version = models.PositiveIntegerField(_("latest version"), default=0)
    deleted_at = models.DateTimeField(_("deleted at"), null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = AgentQuerySet.as_manager()

    class Meta:
        verbose_name = _("agent")
        verbose_name_plural = _("agents")
        indexes = [models.Index(fields=["organisation", "-id"], name="agent_org_id")]
        constraints = [
            models.UniqueConstraint(
                fields=["organisation", "name"], condition=models.Q(deleted_at__isnull=True), name="agent_live_name_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.id})"


class AgentVersionQuerySet(TenantQuerySet):
    organisation_lookup = "agent__organisation"


class AgentVersion(models.Model):
    """One saved configuration of an agent; a turn runs the latest."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="versions")
    version = models.PositiveIntegerField(_("version"))
    model = models.CharField(_("model"), max_length=200)
    instructions = models.TextField(_("instructions"), blank=True, default="")
    # The shape of a key's memory.injection; null: the key's block governs.
    memory_injection = models.JSONField(_("memory injection"), null=True, blank=True)
    created_by = models.CharField(_("created by"), max_length=40)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = AgentVersionQuerySet.as_manager()

    class Meta:
        verbose_name = _("agent version")
        verbose_name_plural = _("agent versions")
        constraints = [models.UniqueConstraint(fields=["agent", "version"], name="agent_version_unique")]
        ordering = ["agent", "version"]

    def __str__(self) -> str:
        return f"{self.agent_id} v{self.version}"
