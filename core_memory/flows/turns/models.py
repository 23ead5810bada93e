from django.db import models
from django.utils.translation import gettext_lazy as _

from core_memory.base.ids import PrefixedIdField
from core_memory.base.tenancy import TenantQuerySet


class Response(models.Model):
    """One turn: one run of a model for a request, on a thread (R-7.1)."""

    class Status(models.TextChoices):
        IN_PROGRESS = "in_progress", _("in progress")
        COMPLETED = "completed", _("completed")
        FAILED = "failed", _("failed")
        INCOMPLETE = "incomplete", _("incomplete")

    id = PrefixedIdField("resp")
    organisation = models.ForeignKey("organisations.Organisation", on_delete=models.CASCADE, related_name="responses")
    thread = models.ForeignKey("threads.Thread", on_delete=models.CASCADE, related_name="responses")
    key = models.ForeignKey("keys.ApiKey", on_delete=models.DO_NOTHING, db_constraint=False, related_name="responses")
    subject = models.CharField(_("person"), max_length=255, null=True, blank=True)
    agent_version = models.ForeignKey(
        "agents.AgentVersion", on_delete=models.SET_NULL, null=True, blank=True, related_name="responses"
    )
    model = models.CharField(_("model"), max_length=200)
    status = models.CharField(_("status"), max_length=16, choices=Status.choices, default=Status.IN_PROGRESS)
    usage = models.JSONField(_("usage"), default=dict, blank=True)
    trace = models.JSONField(_("trace"), default=dict, blank=True)
    error = models.JSONField(_("error"), null=True, blank=True)
    model_calls = models.PositiveSmallIntegerField(_("model calls"), default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    completed_at = models.DateTimeField(_("completed at"), null=True, blank=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        verbose_name = _("response")
        verbose_name_plural = _("responses")
        indexes = [models.Index(fields=["organisation", "-id"], name="response_org_id")]

    def __str__(self) -> str:
        return self.id
