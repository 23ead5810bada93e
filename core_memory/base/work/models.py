"""The abstract unit and run of durable work: the fields every kind of work shares.

A unit is created `queued` when a run plans it, is `running` while one worker holds its
claim (`claim_token`, `lease_until`), and ends written (its kind's own status: `ready`,
`done`), `failed` (with an error code), `parked` (the organisation's monthly token limit) or,
where its kind knows it, `cancelled`. A worker that dies leaves a `running` unit whose lease
runs out; the recoverer then hands it out again. A kind narrows `status` to its own choices.

A run counts its units: `pending` of them are not yet finished, and the last to finish closes
it (`finished_at`).
"""
from django.db import models
from django.utils.translation import gettext_lazy as _

from core_memory.base.work.claims import QUEUED


class WorkUnit(models.Model):
    organisation = models.ForeignKey("organisations.Organisation", on_delete=models.CASCADE, related_name="+")
    status = models.CharField(_("status"), max_length=16, default=QUEUED)
    attempts = models.PositiveSmallIntegerField(_("attempts"), default=0)
    error_code = models.CharField(_("error code"), max_length=64, blank=True, default="")
    error_message = models.CharField(_("error"), max_length=500, blank=True, default="")
    claim_token = models.UUIDField(null=True, blank=True, editable=False)
    lease_until = models.DateTimeField(null=True, blank=True, editable=False)
    input_tokens = models.PositiveIntegerField(_("input tokens"), default=0)
    output_tokens = models.PositiveIntegerField(_("output tokens"), default=0)
    written = models.PositiveIntegerField(_("written"), default=0)
    queued_at = models.DateTimeField(_("queued at"))
    started_at = models.DateTimeField(_("started at"), null=True, blank=True)
    finished_at = models.DateTimeField(_("finished at"), null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return self.id


class WorkRun(models.Model):
    organisation = models.ForeignKey("organisations.Organisation", on_delete=models.CASCADE, related_name="+")
    started_at = models.DateTimeField(_("started at"))
    finished_at = models.DateTimeField(_("finished at"), null=True, blank=True)
    pending = models.PositiveIntegerField(_("pending"), default=0)
    errors = models.PositiveIntegerField(_("errors"), default=0)
    parked = models.PositiveIntegerField(_("parked"), default=0)

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return self.id

    def planned(self, unit_ids: list[str], *, now, **fields) -> None:
        """Inside the planning transaction: the run waits for `unit_ids` (closed now when there
        are none); `fields` are the kind's own counters of the planning."""
        self.pending = len(unit_ids)
        self.finished_at = None if unit_ids else now
        for name, value in fields.items():
            setattr(self, name, value)
        self.save(update_fields=["pending", "finished_at", *fields])
