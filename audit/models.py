from django.db import models
from django.utils.translation import gettext_lazy as _

from core_memory.base.ids import PrefixedIdField
from core_memory.base.tenancy import TenantQuerySet


class AuditEvent(models.Model):
    """Append-only (R-11.1) and tamper-evident. The database refuses UPDATE, DELETE and
    TRUNCATE (migrations 0002, 0003); only the retention purge deletes, through a function
    that runs as its own role. Each event is a link of its organisation's hash chain:
    `sequence` counts up from 1, `hash` covers the event and `previous_hash`; PostgreSQL
    fills the three in (a trigger), so every way of inserting an event chains it
    (`manage.py audit_verify` checks the chains, audit.chain)."""

    id = PrefixedIdField("aud")
    organisation = models.ForeignKey("organisations.Organisation", on_delete=models.DO_NOTHING, related_name="+", db_constraint=False)
    at = models.DateTimeField(_("at"), auto_now_add=True)
    actor = models.CharField(_("actor"), max_length=200)
    action = models.CharField(_("action"), max_length=64)
    target = models.CharField(_("target"), max_length=200, blank=True, default="")
    details = models.JSONField(_("details"), default=dict, blank=True)
    # Set by the database on insert (audit_event_chain); whatever the application sends is replaced.
    sequence = models.BigIntegerField(_("sequence"), null=True, editable=False)
    previous_hash = models.CharField(_("previous hash"), max_length=64, blank=True, default="", editable=False)
    hash = models.CharField(_("hash"), max_length=64, blank=True, default="", editable=False)

    objects = TenantQuerySet.as_manager()

    class Meta:
        verbose_name = _("audit event")
        verbose_name_plural = _("audit log")
        indexes = [
            models.Index(fields=["organisation", "-id"], name="audit_org_id"),
            models.Index(fields=["organisation", "action", "-id"], name="audit_org_action_id"),
            models.Index(fields=["at"], name="audit_at"),
        ]
        constraints = [models.UniqueConstraint(fields=["organisation", "sequence"], name="audit_one_event_per_link")]

    def __str__(self) -> str:
        return f"{self.action} {self.target}"


class AuditChainHead(models.Model):
    """The newest link of an organisation's chain, kept by the database's insert trigger, and
    how far the retention purge has removed the chain's start (`purged_through`)."""

    organisation_id = models.CharField(primary_key=True, max_length=40)
    sequence = models.BigIntegerField(default=0)
    hash = models.CharField(max_length=64)
    purged_through = models.BigIntegerField(default=0)

    objects = TenantQuerySet.as_manager()

    class Meta:
        verbose_name = _("audit chain head")
        verbose_name_plural = _("audit chain heads")
