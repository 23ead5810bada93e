from django.contrib.postgres.fields import ArrayField
from django.db import models


class IdempotentRequestQuerySet(models.QuerySet):
    """A key's remembered answers; another key's are never replayed. Named by organisation too:
    every statement names its organisation (docs/scaling.md)."""

    def for_key(self, key_id: str, *, organisation_id: str):
        return self.filter(organisation_id=organisation_id, key_id=key_id)

    def unscoped(self):
        return self.all()


class IdempotentRequest(models.Model):
    """The first answer to a mutating request sent with an `Idempotency-Key`."""

    class State(models.TextChoices):
        IN_PROGRESS = "in_progress"
        COMPLETED = "completed"

    # Whose answer it is: erasing a person removes the answers about her (`persons`).
    organisation_id = models.CharField(max_length=40, blank=True, default="")
    key_id = models.CharField(max_length=40)
    idempotency_key = models.CharField(max_length=255)
    method = models.CharField(max_length=10)
    path = models.CharField(max_length=500)
    request_hash = models.CharField(max_length=64)
    state = models.CharField(max_length=16, choices=State.choices, default=State.IN_PROGRESS)
    status_code = models.PositiveSmallIntegerField(null=True)
    response_body = models.JSONField(null=True)
    persons = ArrayField(models.CharField(max_length=255), default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    objects = IdempotentRequestQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["key_id", "idempotency_key"], name="idempotency_once_per_key"),
        ]
        indexes = [models.Index(fields=["organisation_id"], name="idempotency_organisation")]
