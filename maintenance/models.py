"""Maintenance: what keeps a memory store healthy, and what it remembers so that each
run looks only at what changed since the last one.

- `MaintenanceState`: per store, how far each analysis has read (`…_through`: records changed
  after it are new to it) and when the store is due again.
- `MaintenanceRun`: one planning of a store and what its jobs did (the command's summary).
- `MaintenanceJob`: a unit of durable work (core_memory.base.work), one model call at most —
  the contradictions among one person's records (or the shared ones), one store lesson, one
  promotion analysis. Claimed with a token and a lease and written in one transaction that
  locks it by its token, like extraction's windows: a worker killed mid-job loses and
  duplicates nothing.
- What a job concluded, so no later run asks again while the records stand as they were:
  `ContradictionCheck` (a pair judged), `EpisodeUse` (episodes a store lesson was drawn from),
  `PromotionReview` (a record the analysis model judged).
- `Proposal` and `ProposalSource`: a suggested shared record and the personal records it rests
  on; a record is the source of one proposal at most, ever.

Every note about a record goes with the record when it is erased (foreign keys, CASCADE).
"""
from django.db import models
from django.db.models import F, Q
from django.utils.translation import gettext_lazy as _

from core_memory.base.ids import PrefixedIdField
from core_memory.base.tenancy import TenantQuerySet
from core_memory.base.work.models import WorkRun, WorkUnit
from stores.models import KnowledgeIndex


class MaintenanceState(models.Model):
    """One store's maintenance clock. A `…_through` of null means the analysis has not run
    since it was (last) switched on: its first run reads the whole store once."""

    index = models.OneToOneField(KnowledgeIndex, on_delete=models.CASCADE, primary_key=True, related_name="maintenance_state")
    organisation = models.ForeignKey("organisations.Organisation", on_delete=models.CASCADE, related_name="+")
    contested_through = models.DateTimeField(_("contradictions read through"), null=True, blank=True)
    lessons_through = models.DateTimeField(_("lessons read through"), null=True, blank=True)
    promotion_through = models.DateTimeField(_("promotion read through"), null=True, blank=True)
    next_run_at = models.DateTimeField(_("next run at"), null=True, blank=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        verbose_name = _("maintenance state")
        verbose_name_plural = _("maintenance states")
        indexes = [models.Index(fields=["next_run_at"], name="maintenance_due")]

    def __str__(self) -> str:
        return f"maintenance of {self.index_id}"


class MaintenanceRun(WorkRun):
    """One planning of a store's maintenance and what its jobs did. `pending` counts its jobs
    not yet finished; the last one to finish closes the run."""

    id = PrefixedIdField("mrun")
    index = models.ForeignKey(KnowledgeIndex, on_delete=models.CASCADE, related_name="maintenance_runs")
    # Records the planning looked at: those changed since each analysis last read the store.
    changed = models.PositiveIntegerField(_("changed records read"), default=0)
    jobs = models.PositiveIntegerField(_("jobs"), default=0)
    contested = models.PositiveIntegerField(_("pairs marked contested"), default=0)
    lessons = models.PositiveIntegerField(_("lessons written"), default=0)
    proposals = models.PositiveIntegerField(_("proposals made"), default=0)

    objects = TenantQuerySet.as_manager()

    class Meta:
        verbose_name = _("maintenance run")
        verbose_name_plural = _("maintenance runs")
        indexes = [models.Index(fields=["index", "-started_at"], name="maintenance_run_latest")]


class MaintenanceJob(WorkUnit):
    """One unit of maintenance work (the module's docstring). `payload` holds what it is about:
    record ids with the `updated_at` each had when planned (a record changed since is left
    to the next run), and for a lesson the episodes and how they went."""

    class Kind(models.TextChoices):
        CONTRADICTIONS = "contradictions", _("contradictions")
        STORE_LESSON = "store_lesson", _("store lesson")
        PROMOTION = "promotion", _("promotion analysis")

    class Status(models.TextChoices):
        QUEUED = "queued", _("queued")
        RUNNING = "running", _("running")
        DONE = "done", _("done")
        FAILED = "failed", _("failed")
        PARKED = "parked", _("parked")
        CANCELLED = "cancelled", _("cancelled")

    id = PrefixedIdField("mjob")
    index = models.ForeignKey(KnowledgeIndex, on_delete=models.CASCADE, related_name="maintenance_jobs")
    run = models.ForeignKey(MaintenanceRun, on_delete=models.SET_NULL, null=True, blank=True, related_name="job_set")
    kind = models.CharField(_("kind"), max_length=32, choices=Kind.choices)
    # The person whose records the job reads; null: the shared records. Erased with her.
    subject = models.CharField(_("person"), max_length=255, null=True, blank=True)
    payload = models.JSONField(_("payload"), default=dict)
    status = models.CharField(_("status"), max_length=16, choices=Status.choices, default=Status.QUEUED)
    model_calls = models.PositiveSmallIntegerField(_("model calls"), default=0)
    # `written` (WorkUnit) counts pairs marked contested, lessons written, proposals made.

    objects = TenantQuerySet.as_manager()

    class Meta:
        verbose_name = _("maintenance job")
        verbose_name_plural = _("maintenance jobs")
        indexes = [
            models.Index(fields=["index", "status"], name="maintenance_job_status"),
            models.Index(fields=["status", "lease_until"], name="maintenance_job_stale", condition=Q(status__in=["queued", "running"])),
            models.Index(fields=["organisation", "subject"], name="maintenance_job_subject"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["queued", "running", "done", "failed", "parked", "cancelled"]), name="maintenance_job_status_known"
            ),
            models.CheckConstraint(
                condition=Q(kind__in=["contradictions", "store_lesson", "promotion"]), name="maintenance_job_kind_known"
            ),
        ]


class ContradictionCheck(models.Model):
    """A pair of records the helper model judged, and whether they contradict.
    A record changed after `checked_at` makes the pair worth asking about again."""

    organisation = models.ForeignKey("organisations.Organisation", on_delete=models.CASCADE, related_name="+")
    first = models.ForeignKey("memory.MemoryRecord", on_delete=models.CASCADE, related_name="+")
    second = models.ForeignKey("memory.MemoryRecord", on_delete=models.CASCADE, related_name="+")
    contradicts = models.BooleanField(_("contradicts"))
    checked_at = models.DateTimeField(_("checked at"))

    objects = TenantQuerySet.as_manager()

    class Meta:
        verbose_name = _("contradiction check")
        verbose_name_plural = _("contradiction checks")
        constraints = [
            models.UniqueConstraint(fields=["first", "second"], name="contradiction_check_once_per_pair"),
            models.CheckConstraint(condition=Q(first__lt=F("second")), name="contradiction_check_pair_ordered"),
        ]


class EpisodeUse(models.Model):
    """An episode a store lesson was drawn from: used once, never again."""

    episode = models.OneToOneField("memory.MemoryRecord", on_delete=models.CASCADE, primary_key=True, related_name="+")
    organisation = models.ForeignKey("organisations.Organisation", on_delete=models.CASCADE, related_name="+")
    # The lesson it went into; it stays used if that lesson is deleted or ended.
    lesson = models.ForeignKey("memory.MemoryRecord", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    used_at = models.DateTimeField(_("used at"))

    objects = TenantQuerySet.as_manager()

    class Meta:
        verbose_name = _("episode used")
        verbose_name_plural = _("episodes used")


class PromotionReview(models.Model):
    """The analysis model's judgement of one person's record: general knowledge
    of the organisation or not. A record changed after `reviewed_at` is judged again."""

    record = models.OneToOneField("memory.MemoryRecord", on_delete=models.CASCADE, primary_key=True, related_name="+")
    organisation = models.ForeignKey("organisations.Organisation", on_delete=models.CASCADE, related_name="+")
    general = models.BooleanField(_("general knowledge"))
    reviewed_at = models.DateTimeField(_("reviewed at"))

    objects = TenantQuerySet.as_manager()

    class Meta:
        verbose_name = _("promotion review")
        verbose_name_plural = _("promotion reviews")


class ProposalQuerySet(TenantQuerySet):
    def for_key(self, key):
        """Proposals of the indexes available to the key: a proposal is as absent as its index."""
        return self.for_organisation(key.organisation_id).filter(index__in=KnowledgeIndex.objects.for_key(key).values("id"))

    def live(self):
        return self.filter(index__deleted_at__isnull=True)


class Proposal(models.Model):
    """A suggestion to copy a person's fact into a shared record. It rests on one
    or more personal records (`sources`); `text` is one of theirs. Applying writes a new shared
    record (`applied_record`); the persons' own records stay theirs."""

    class Reason(models.TextChoices):
        SEVERAL_PERSONS = "several_persons", _("several persons hold it")
        GENERAL_KNOWLEDGE = "general_knowledge", _("judged general knowledge")

    class Status(models.TextChoices):
        PENDING = "pending", _("pending")
        APPLIED = "applied", _("applied")
        REJECTED = "rejected", _("rejected")

    id = PrefixedIdField("prop")
    organisation = models.ForeignKey("organisations.Organisation", on_delete=models.CASCADE, related_name="+")
    index = models.ForeignKey(KnowledgeIndex, on_delete=models.CASCADE, related_name="proposals")
    type = models.CharField(_("type"), max_length=40)
    text = models.TextField(_("text"))
    confidence = models.FloatField(_("confidence"), default=1.0)
    reason = models.CharField(_("reason"), max_length=32, choices=Reason.choices)
    status = models.CharField(_("status"), max_length=16, choices=Status.choices, default=Status.PENDING)
    applied_record = models.ForeignKey(
        "memory.MemoryRecord", on_delete=models.SET_NULL, null=True, blank=True, related_name="+", verbose_name=_("shared record")
    )
    decided_by = models.CharField(_("decided by"), max_length=200, blank=True, default="")
    decided_at = models.DateTimeField(_("decided at"), null=True, blank=True)
    created_at = models.DateTimeField(_("created at"))

    objects = ProposalQuerySet.as_manager()

    class Meta:
        verbose_name = _("proposal")
        verbose_name_plural = _("proposals")
        indexes = [
            models.Index(fields=["organisation", "-id"], name="proposal_org_id"),
            models.Index(fields=["index", "status", "-id"], name="proposal_index_status"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=["pending", "applied", "rejected"]), name="proposal_status_known"),
            models.CheckConstraint(condition=Q(confidence__gte=0.0, confidence__lte=1.0), name="proposal_confidence_0_1"),
        ]

    def __str__(self) -> str:
        return self.id


class ProposalSourceQuerySet(TenantQuerySet):
    organisation_lookup = "proposal__organisation"


class ProposalSource(models.Model):
    """A personal record a proposal rests on. One proposal per record, ever, so nobody decides
    twice about the same fact: a record once proposed, applied or rejected is never proposed
    again."""

    record = models.OneToOneField("memory.MemoryRecord", on_delete=models.CASCADE, primary_key=True, related_name="+")
    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="sources")

    objects = ProposalSourceQuerySet.as_manager()

    class Meta:
        verbose_name = _("proposal source")
        verbose_name_plural = _("proposal sources")
