"""Extraction: a store's switch and its connector, the runs it makes, how far it
has read each thread, and the windows it reads them in.

A window is a unit of durable work (core_memory.base.work): created `queued` when a run
plans it, `running` while one worker holds its claim (a token and a lease), and it ends
`ready` (its records written in the same transaction), `failed` (with an error code) or
`parked` (the organisation's monthly token limit). A worker that dies leaves a `running`
window whose lease runs out; the dispatcher then hands it out again.
"""
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from core_memory.base.ids import PrefixedIdField
from core_memory.base.tenancy import TenantQuerySet
from core_memory.base.work.models import WorkRun, WorkUnit


class ConnectorQuerySet(TenantQuerySet):
    def live(self):
        return self.filter(deleted_at__isnull=True)


class ExtractionConnector(models.Model):
    """What reads an organisation's threads into one index on behalf of a switch.
    Deleting it stops the reading; re-sending the switch gives it a new one."""

    id = PrefixedIdField("con")
    organisation = models.ForeignKey("organisations.Organisation", on_delete=models.CASCADE, related_name="connectors")
    index = models.ForeignKey("stores.KnowledgeIndex", on_delete=models.CASCADE, related_name="connectors")
    deleted_at = models.DateTimeField(_("deleted at"), null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = ConnectorQuerySet.as_manager()

    class Meta:
        verbose_name = _("connector")
        verbose_name_plural = _("connectors")

    def __str__(self) -> str:
        return self.id


class ExtractionSwitch(models.Model):
    """One store's extraction switch. `author_key_id` is the key extraction runs
    under: the key that last sent the switch, kept as an id because it may be deleted."""

    class Threads(models.TextChoices):
        WITH_PERSON = "with_person", _("with a person")
        ALL = "all", _("all")

    organisation = models.ForeignKey("organisations.Organisation", on_delete=models.CASCADE, related_name="extraction_switches")
    index = models.OneToOneField("stores.KnowledgeIndex", on_delete=models.CASCADE, primary_key=True, related_name="extraction_switch")
    connector = models.ForeignKey(ExtractionConnector, on_delete=models.PROTECT, related_name="switches")
    enabled = models.BooleanField(_("enabled"), default=False)
    model = models.CharField(_("model"), max_length=200, blank=True, default="")
    instructions = models.TextField(_("instructions"), blank=True, default="")
    types = models.JSONField(_("types"), default=list)
    schedule_minutes = models.PositiveIntegerField(_("every (minutes)"), default=60)
    # Null: stored before the field existed, read as `all`, as before it existed.
    threads = models.CharField(_("threads"), max_length=16, choices=Threads.choices, null=True, blank=True)
    episodes = models.BooleanField(_("episodes"), default=False)
    lessons = models.BooleanField(_("lessons"), default=False)
    filter_key_ids = models.JSONField(_("key ids"), default=list, blank=True)
    filter_agent_ids = models.JSONField(_("agent ids"), default=list, blank=True)
    author_key_id = models.CharField(_("runs as key"), max_length=40)
    # Sessions that come to rest after this moment get an episode: the time
    # episodes were last switched on.
    episodes_since = models.DateTimeField(_("episodes since"), null=True, blank=True)
    next_run_at = models.DateTimeField(_("next run at"), null=True, blank=True)
    set_at = models.DateTimeField(_("set at"))
    created_at = models.DateTimeField(auto_now_add=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        verbose_name = _("extraction switch")
        verbose_name_plural = _("extraction switches")
        indexes = [models.Index(fields=["next_run_at"], name="switch_due", condition=Q(enabled=True))]
        constraints = [
            models.CheckConstraint(condition=Q(schedule_minutes__gte=1), name="switch_schedule_positive"),
            models.CheckConstraint(condition=~Q(lessons=True) | Q(episodes=True), name="switch_lessons_need_episodes"),
        ]

    def __str__(self) -> str:
        return f"extraction of {self.index_id}"

    @property
    def threads_read(self) -> str:
        return self.threads or self.Threads.ALL


class ExtractionRun(WorkRun):
    """One run of a switch: the windows it queued and what they wrote (the switch's `last_run`).
    `pending` counts its windows not yet done; the last one to finish closes the run."""

    id = PrefixedIdField("run")
    switch = models.ForeignKey(ExtractionSwitch, on_delete=models.CASCADE, related_name="runs")
    windows = models.PositiveIntegerField(_("windows"), default=0)
    written = models.PositiveIntegerField(_("written"), default=0)
    confirmed = models.PositiveIntegerField(_("confirmed"), default=0)
    replaced = models.PositiveIntegerField(_("replaced"), default=0)

    objects = TenantQuerySet.as_manager()

    class Meta:
        verbose_name = _("extraction run")
        verbose_name_plural = _("extraction runs")
        indexes = [models.Index(fields=["switch", "-started_at"], name="run_switch_latest")]


class CursorQuerySet(TenantQuerySet):
    organisation_lookup = "switch__organisation"


class ExtractionCursor(models.Model):
    """How far a switch has read a thread: items before `read_position` were copied into
    windows, so only items not yet read are read. It goes with its thread."""

    switch = models.ForeignKey(ExtractionSwitch, on_delete=models.CASCADE, related_name="cursors")
    thread = models.ForeignKey("threads.Thread", on_delete=models.CASCADE, related_name="+")
    read_position = models.PositiveIntegerField(_("read up to position"), default=0)

    objects = CursorQuerySet.as_manager()

    class Meta:
        verbose_name = _("extraction cursor")
        verbose_name_plural = _("extraction cursors")
        constraints = [models.UniqueConstraint(fields=["switch", "thread"], name="cursor_one_per_thread")]


class ExtractionWindow(WorkUnit):
    """A slice of a thread's items read in one model call."""

    class Status(models.TextChoices):
        QUEUED = "queued", _("queued")
        RUNNING = "running", _("running")
        READY = "ready", _("ready")
        FAILED = "failed", _("failed")
        PARKED = "parked", _("parked")

    id = PrefixedIdField("win")
    switch = models.ForeignKey(ExtractionSwitch, on_delete=models.CASCADE, related_name="windows")
    run = models.ForeignKey(ExtractionRun, on_delete=models.SET_NULL, null=True, blank=True, related_name="window_set")
    thread = models.ForeignKey("threads.Thread", on_delete=models.CASCADE, related_name="+")
    first_position = models.PositiveIntegerField(_("first position"))
    last_position = models.PositiveIntegerField(_("last position"))
    # The sessions (runs of items ending in a quiet period) that end in this window,
    # each {"first_position", "last_position"}; a long session may start in an earlier window.
    sessions = models.JSONField(_("sessions ending here"), default=list, blank=True)
    status = models.CharField(_("status"), max_length=16, choices=Status.choices, default=Status.QUEUED)
    confirmed = models.PositiveIntegerField(_("confirmed"), default=0)
    replaced = models.PositiveIntegerField(_("replaced"), default=0)

    objects = TenantQuerySet.as_manager()

    class Meta:
        verbose_name = _("extraction window")
        verbose_name_plural = _("extraction windows")
        indexes = [
            models.Index(fields=["switch", "status"], name="window_switch_status"),
            models.Index(fields=["status", "lease_until"], name="window_stale", condition=Q(status__in=["queued", "running"])),
        ]
        constraints = [
            models.UniqueConstraint(fields=["switch", "thread", "first_position"], name="window_once_per_range"),
            models.CheckConstraint(condition=Q(last_position__gte=models.F("first_position")), name="window_range_ordered"),
            models.CheckConstraint(
                condition=Q(status__in=["queued", "running", "ready", "failed", "parked"]), name="window_status_known"
            ),
        ]
