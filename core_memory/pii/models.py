from django.db import models
from django.utils.translation import gettext_lazy as _

from core_memory.base.tenancy import TenantQuerySet


class ThreadPlaceholders(models.Model):
    """The real values behind a thread's placeholders, so that every turn and every
    extraction window of the thread numbers a value the same way and gets it back.

    It holds the values themselves: it is personal data, erased with the thread's person
    (core_memory.flows.erasure) and never logged or shown.
    """

    thread = models.OneToOneField(
        "threads.Thread",
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="placeholders",
        verbose_name=_("thread"),
    )
    organisation = models.ForeignKey("organisations.Organisation", on_delete=models.CASCADE, related_name="+")
    # {"<EMAIL_1>": "jan@example.nl", …}
    values = models.JSONField(_("values"), default=dict, blank=True)
    # The highest number given per kind, {"EMAIL": 1, …}; above the values' when a person typed a look-alike.
    counters = models.JSONField(_("counters"), default=dict, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        verbose_name = _("thread placeholders")
        verbose_name_plural = _("thread placeholders")

    def __str__(self) -> str:
        return self.thread_id
