from django.db import models
from django.db.models.functions import Now
from django.utils.translation import gettext_lazy as _

from audit.labels import action_label
from core_memory.base.ids import PrefixedIdField
from core_memory.base.tenancy import TenantQuerySet


class AuditEvent(models.Model):
    """Append-only and tamper-evident. The database refuses UPDATE, DELETE and
    TRUNCATE (migrations 0002-0005); only the retention purge deletes and an erasure's scrub
    blanks a target or a detail of the events that erasure names, each through a function
    that runs as its own role. Each
    event is a link of its organisation's hash chain: `sequence` counts up from 1, `hash`
    covers the event (its target and details through salted commitments) and
    `previous_hash`; PostgreSQL fills these in and sets `at` from its own clock (a trigger),
    so every way of inserting an event chains and dates it (`manage.py audit_verify` checks
    the chains, audit.chain)."""

    id = PrefixedIdField("aud")
    organisation = models.ForeignKey("organisations.Organisation", on_delete=models.DO_NOTHING, related_name="+", db_constraint=False)
    # The database's clock at insert, whatever the application sends (audit/migrations/0004).
    at = models.DateTimeField(_("at"), db_default=Now(), editable=False)
    actor = models.CharField(_("actor"), max_length=200)
    action = models.CharField(_("action"), max_length=64)
    # As long as a person's subject may be (the API takes 255 characters): `person.*` events name her.
    target = models.CharField(_("target"), max_length=255, blank=True, default="")
    details = models.JSONField(_("details"), default=dict, blank=True)
    # Set by the database on insert (audit_event_chain); whatever the application sends is replaced.
    sequence = models.BigIntegerField(_("sequence"), null=True, editable=False)
    previous_hash = models.CharField(_("previous hash"), max_length=64, blank=True, default="", editable=False)
    hash = models.CharField(_("hash"), max_length=64, blank=True, default="", editable=False)
    # The chain covers SHA-256(salt, value) of target and details; a scrub blanks the value and
    # drops its salt, so the commitment left cannot be matched to a guess.
    target_salt = models.CharField(_("target salt"), max_length=64, null=True, editable=False)
    details_salt = models.CharField(_("details salt"), max_length=64, null=True, editable=False)
    target_commitment = models.CharField(_("target commitment"), max_length=64, blank=True, default="", editable=False)
    details_commitment = models.CharField(_("details commitment"), max_length=64, blank=True, default="", editable=False)
    scrubbed_at = models.DateTimeField(_("scrubbed at"), null=True, editable=False)
    # The `person.erased` event whose erasure scrubbed it: that event lists it (`scrubbed_events`).
    scrubbed_by = models.CharField(_("scrubbed by"), max_length=40, null=True, editable=False)

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
        # As people read it (the console's title of an event), the action by its label.
        return f"{action_label(self.action)} {self.target}".strip()


class AuditChainHead(models.Model):
    """The newest link of an organisation's chain, kept by the database's insert trigger, and
    how far the retention purge has removed the chain's start (`purged_through`)."""

    organisation_id = models.CharField(primary_key=True, max_length=40)
    sequence = models.BigIntegerField(default=0)
    hash = models.CharField(max_length=64)
    purged_through = models.BigIntegerField(default=0)
    # The newest event's time (the next is never earlier), and the first sequence whose time the
    # database set: events chained before it kept their transaction's start time.
    at = models.DateTimeField(null=True)
    time_ordered_from = models.BigIntegerField(default=1)
    # Scrubs since this time name the erasure that made them; earlier ones (before the database
    # checked that) did not. Null: every scrub names its erasure.
    scrubs_named_from = models.DateTimeField(null=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        verbose_name = _("audit chain head")
        verbose_name_plural = _("audit chain heads")
