"""Webhook subscriptions, the events they are sent, and every attempt at sending one.

An event (`WebhookEvent`) is written in the same transaction as the change it tells of, with a
delivery (`WebhookDelivery`) for each subscription of the organisation that asked for its kind:
a change that rolls back tells no one, and one that commits is never lost (the deliveries are
durable work, core_memory.base.work). The event is the deliveries' run: it waits until each
has been delivered or given up. Every attempt is kept (`WebhookAttempt`) for the delivery log.
"""
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from core_memory.base.ids import PrefixedIdField
from core_memory.base.tenancy import TenantQuerySet
from core_memory.base.work.claims import FAILED, QUEUED, RUNNING
from core_memory.base.work.models import WorkRun, WorkUnit

# What a subscription may ask for: what happened to a record, a proposal made, an extraction
# window that failed, a person erased.
EVENT_KINDS = (
    "record.created",
    "record.updated",
    "record.deleted",
    "record.contested",
    "proposal.created",
    "extraction.window.failed",
    "person.erased",
)
DELIVERED = "delivered"
# A subscription's status as the API names it (WebhookSubscription.Status).
SUBSCRIPTION_STATUSES = ("active", "paused")


class WebhookSubscription(models.Model):
    """An address of the organisation's that is sent the events of the kinds it names.

    `secret` (`whsec_` and 32 random bytes in base64) signs every delivery (Standard Webhooks);
    it is shown once, when the subscription is made, and kept to sign with. A subscription
    whose deliveries keep failing is `paused` (`paused_reason`): its events wait, queued, until
    it is resumed."""

    class Status(models.TextChoices):
        ACTIVE = "active", _("active")
        PAUSED = "paused", _("paused")

    id = PrefixedIdField("whk")
    organisation = models.ForeignKey("organisations.Organisation", on_delete=models.CASCADE, related_name="+")
    url = models.URLField(_("address"), max_length=2000)
    events = ArrayField(models.CharField(max_length=40), verbose_name=_("events"))
    description = models.CharField(_("description"), max_length=200, blank=True, default="")
    secret = models.CharField(max_length=100, editable=False)
    status = models.CharField(_("status"), max_length=16, choices=Status.choices, default=Status.ACTIVE)
    paused_reason = models.CharField(_("why paused"), max_length=500, blank=True, default="")
    paused_at = models.DateTimeField(_("paused at"), null=True, blank=True)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        verbose_name = _("webhook")
        verbose_name_plural = _("webhooks")
        indexes = [models.Index(fields=["organisation", "-id"], name="webhooks_subscription_org")]

    def __str__(self) -> str:
        return self.url


class WebhookEvent(WorkRun):
    """One thing that happened, as its subscribers are sent it: `payload` is the body every
    delivery posts, and the id its `webhook-id` (the same on every retry, so a receiver can
    drop a repeat). `subject` is the person it is about, if any: erasing her removes it."""

    id = PrefixedIdField("msg")
    kind = models.CharField(_("event"), max_length=40)
    subject = models.CharField(_("person"), max_length=255, null=True, blank=True)
    payload = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        verbose_name = _("webhook event")
        verbose_name_plural = _("webhook events")
        indexes = [
            models.Index(fields=["organisation", "subject"], name="webhooks_event_subject", condition=Q(subject__isnull=False)),
            models.Index(fields=["created_at"], name="webhooks_event_created"),
        ]


class WebhookDelivery(WorkUnit):
    """One event for one subscription: queued, running, then delivered or failed. A failed one
    is tried again at `next_attempt_at`; without one it has used its attempts."""

    class Status(models.TextChoices):
        QUEUED = QUEUED, _("queued")
        RUNNING = RUNNING, _("running")
        DELIVERED = DELIVERED, _("delivered")
        FAILED = FAILED, _("failed")

    id = PrefixedIdField("dlv")
    run = models.ForeignKey(WebhookEvent, on_delete=models.CASCADE, related_name="deliveries", verbose_name=_("event"))
    subscription = models.ForeignKey(WebhookSubscription, on_delete=models.CASCADE, related_name="deliveries")
    status = models.CharField(_("status"), max_length=16, choices=Status.choices, default=Status.QUEUED)
    next_attempt_at = models.DateTimeField(_("next attempt at"), null=True, blank=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        verbose_name = _("webhook delivery")
        verbose_name_plural = _("webhook deliveries")
        indexes = [
            models.Index(fields=["subscription", "-id"], name="webhooks_delivery_log"),
            # The dispatcher's reads: retries due, and units left behind.
            models.Index(fields=["next_attempt_at"], name="webhooks_delivery_retry", condition=Q(status=FAILED, next_attempt_at__isnull=False)),
            models.Index(fields=["status", "queued_at"], name="webhooks_delivery_open", condition=Q(status__in=[QUEUED, RUNNING])),
        ]


class WebhookAttempt(models.Model):
    """One try at sending a delivery: when, what the receiver answered (`status_code`, null when
    it could not be reached), how long it took, and why it failed (`error_code`, empty when it
    was delivered)."""

    organisation = models.ForeignKey("organisations.Organisation", on_delete=models.CASCADE, related_name="+")
    delivery = models.ForeignKey(WebhookDelivery, on_delete=models.CASCADE, related_name="log")
    number = models.PositiveSmallIntegerField(_("attempt"))
    at = models.DateTimeField(_("at"))
    status_code = models.PositiveSmallIntegerField(_("status code"), null=True, blank=True)
    duration_ms = models.PositiveIntegerField(_("duration (ms)"), default=0)
    error_code = models.CharField(_("error code"), max_length=64, blank=True, default="")
    error_message = models.CharField(_("error"), max_length=500, blank=True, default="")

    objects = TenantQuerySet.as_manager()

    class Meta:
        verbose_name = _("webhook attempt")
        verbose_name_plural = _("webhook attempts")
        ordering = ["delivery", "number"]
        indexes = [models.Index(fields=["delivery", "number"], name="webhooks_attempt_delivery")]
