from django.db import models
from django.utils.translation import gettext_lazy as _

from core_memory.base.ids import PrefixedIdField
from core_memory.base.tenancy import TenantQuerySet


class AuditEvent(models.Model):
    """Append-only (R-11.1): the database refuses UPDATE and DELETE (migration 0002),
    except the retention purge, which opens a door for its own transaction only."""

    id = PrefixedIdField("aud")
    organisation = models.ForeignKey("organisations.Organisation", on_delete=models.DO_NOTHING, related_name="+", db_constraint=False)
    at = models.DateTimeField(_("at"), auto_now_add=True)
    actor = models.CharField(_("actor"), max_length=200)
    action = models.CharField(_("action"), max_length=64)
    target = models.CharField(_("target"), max_length=200, blank=True, default="")
    details = models.JSONField(_("details"), default=dict, blank=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        verbose_name = _("audit event")
        verbose_name_plural = _("audit log")
        indexes = [
            models.Index(fields=["organisation", "-id"], name="audit_org_id"),
            models.Index(fields=["organisation", "action", "-id"], name="audit_org_action_id"),
            models.Index(fields=["at"], name="audit_at"),
        ]

    def __str__(self) -> str:
        return f"{self.action} {self.target}"
