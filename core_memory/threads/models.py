from django.db import models
from django.utils.translation import gettext_lazy as _

from core_memory.base.ids import PrefixedIdField
from core_memory.base.tenancy import TenantQuerySet


class Thread(models.Model):
    """A conversation of one organisation: its key, its person (or none) and the agents that answered."""

    id = PrefixedIdField("thr")
    organisation = models.ForeignKey("organisations.Organisation", on_delete=models.CASCADE, related_name="threads")
    # The key's id outlives the key: extraction filters by key ids, also of deleted keys.
    key = models.ForeignKey(
        "keys.ApiKey", on_delete=models.DO_NOTHING, db_constraint=False, related_name="threads", verbose_name=_("key")
    )
    subject = models.CharField(_("person"), max_length=255, null=True, blank=True)
    metadata = models.JSONField(_("metadata"), default=dict, blank=True)
    agents = models.ManyToManyField("agents.Agent", blank=True, related_name="threads", verbose_name=_("agents that answered"))
    item_count = models.PositiveIntegerField(_("items"), default=0)
    last_item_at = models.DateTimeField(_("last item at"), null=True, blank=True)
    # Set the first time a key with `pii_redaction` writes to the thread.
    redacting_key_wrote_at = models.DateTimeField(_("first written by a redacting key"), null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        verbose_name = _("thread")
        verbose_name_plural = _("threads")
        indexes = [
            models.Index(fields=["organisation", "-id"], name="thread_org_id"),
            models.Index(fields=["organisation", "last_item_at"], name="thread_org_last_item"),
        ]

    def __str__(self) -> str:
        return self.id


class ItemQuerySet(TenantQuerySet):
    organisation_lookup = "thread__organisation"


class Item(models.Model):
    """One entry of a thread, in the order it was added (`position`)."""

    class Role(models.TextChoices):
        USER = "user", _("user")
        ASSISTANT = "assistant", _("assistant")
        TOOL = "tool", _("tool")
        SYSTEM = "system", _("system")

    class Kind(models.TextChoices):
        MESSAGE = "message", _("message")
        TOOL_CALL = "tool_call", _("tool call")
        TOOL_RESULT = "tool_result", _("tool result")
        REASONING = "reasoning", _("reasoning")

    id = PrefixedIdField("itm")
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="items")
    position = models.PositiveIntegerField(_("position"))
    role = models.CharField(_("role"), max_length=16, choices=Role.choices)
    kind = models.CharField(_("kind"), max_length=16, choices=Kind.choices, default=Kind.MESSAGE)
    content = models.JSONField(_("content"), null=True, blank=True)
    name = models.CharField(_("tool name"), max_length=200, blank=True, default="")
    call_id = models.CharField(_("tool call id"), max_length=200, blank=True, default="")
    sealed = models.BooleanField(_("sealed"), default=False)
    response_id = models.CharField(_("response"), max_length=40, null=True, blank=True, db_index=True)
    created_at = models.DateTimeField(_("created at"))

    objects = ItemQuerySet.as_manager()

    class Meta:
        verbose_name = _("item")
        verbose_name_plural = _("items")
        constraints = [
            models.UniqueConstraint(fields=["thread", "position"], name="item_one_per_position"),
            models.CheckConstraint(
                condition=~models.Q(kind__in=["tool_call", "tool_result"]) | ~models.Q(call_id=""),
                name="item_tool_entries_have_call_id",
            ),
        ]
        ordering = ["thread", "position"]

    def __str__(self) -> str:
        return self.id


class Response(models.Model):
    """One turn: one run of a model for a request, on a thread.

    It lives with the thread (the turn flow above writes it) so that the layers under
    the flows — extraction's episodes — can read how a turn ended."""

    class Status(models.TextChoices):
        IN_PROGRESS = "in_progress", _("in progress")
        COMPLETED = "completed", _("completed")
        FAILED = "failed", _("failed")
        INCOMPLETE = "incomplete", _("incomplete")

    id = PrefixedIdField("resp")
    organisation = models.ForeignKey("organisations.Organisation", on_delete=models.CASCADE, related_name="responses")
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="responses")
    key = models.ForeignKey("keys.ApiKey", on_delete=models.DO_NOTHING, db_constraint=False, related_name="responses")
    subject = models.CharField(_("person"), max_length=255, null=True, blank=True)
    agent_version = models.ForeignKey(
        "agents.AgentVersion", on_delete=models.SET_NULL, null=True, blank=True, related_name="responses"
    )
    model = models.CharField(_("model"), max_length=200)
    status = models.CharField(_("status"), max_length=16, choices=Status.choices, default=Status.IN_PROGRESS)
    usage = models.JSONField(_("usage"), default=dict, blank=True)
    trace = models.JSONField(_("trace"), default=dict, blank=True)
    # What the injection walk did beyond the trace's counts (memory.injection.walk.InjectionResult.detail):
    # record ids per section, those skipped and why. Shown in the console, never in the API answer.
    memory_detail = models.JSONField(_("memory detail"), default=dict, blank=True)
    error = models.JSONField(_("error"), null=True, blank=True)
    model_calls = models.PositiveSmallIntegerField(_("model calls"), default=0)
    # The thread position of the turn's first output item: what comes before it of this
    # response is its input, so the turn's output can be read back alone (null: older turns).
    output_position = models.PositiveIntegerField(_("first output position"), null=True, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    completed_at = models.DateTimeField(_("completed at"), null=True, blank=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        verbose_name = _("response")
        verbose_name_plural = _("responses")
        indexes = [models.Index(fields=["organisation", "-id"], name="response_org_id")]

    def __str__(self) -> str:
        return self.id
