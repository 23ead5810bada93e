from django.db import models
from django.db.models import Sum
from django.utils.translation import gettext_lazy as _

from core_memory.base.tenancy import TenantQuerySet


class TokenUsageQuerySet(TenantQuerySet):
    def month_total(self, *, month) -> int:
        """Tokens used in the month that starts on `month`, by the organisation
        the queryset is scoped to (`for_organisation`)."""
        return self.filter(month=month).aggregate(total=Sum("total_tokens"))["total"] or 0


class TokenUsage(models.Model):
    """Every model call's tokens, per organisation and calendar month (UTC).

    One row per organisation and month; calls raise its counters with F() so that
    concurrent turns never lose a count.
    """

    organisation = models.ForeignKey("organisations.Organisation", on_delete=models.CASCADE, related_name="token_usage")
    month = models.DateField(_("month"), help_text=_("The first day of the month (UTC)."))
    input_tokens = models.BigIntegerField(_("input tokens"), default=0)
    output_tokens = models.BigIntegerField(_("output tokens"), default=0)
    total_tokens = models.BigIntegerField(_("total tokens"), default=0)
    calls = models.BigIntegerField(_("calls"), default=0)
    updated_at = models.DateTimeField(auto_now=True)

    objects = TokenUsageQuerySet.as_manager()

    class Meta:
        verbose_name = _("token usage")
        verbose_name_plural = _("token usage")
        constraints = [models.UniqueConstraint(fields=["organisation", "month"], name="token_usage_one_row_per_month")]

    def __str__(self) -> str:
        return f"{self.organisation_id} {self.month:%Y-%m}: {self.total_tokens}"
