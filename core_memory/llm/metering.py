"""Metering: every model call's tokens, per organisation and calendar month."""
from __future__ import annotations

from datetime import date, datetime
from datetime import timezone as dt_timezone

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from core_memory.base.transactions import lazily_committed
from core_memory.llm.models import TokenUsage
from core_memory.llm.protocol import TokenCount
from core_memory.organisations.models import Organisation


def usage_month(at: datetime | None = None) -> date:
    at = (at or timezone.now()).astimezone(dt_timezone.utc)
    return at.date().replace(day=1)


def token_usage_record(*, organisation: Organisation, usage: TokenCount, at: datetime | None = None) -> None:
    """Adds one call's tokens to the organisation's row for the month. Its commit does
    not wait for the disk: the caller's next commit, which writes what the call produced,
    does (core_memory.base.transactions)."""
    month = usage_month(at)
    changes = {
        "input_tokens": F("input_tokens") + usage.input_tokens,
        "output_tokens": F("output_tokens") + usage.output_tokens,
        "total_tokens": F("total_tokens") + usage.total_tokens,
        "calls": F("calls") + 1,
        "updated_at": timezone.now(),
    }
    with lazily_committed():
        if TokenUsage.objects.for_organisation(organisation).filter(month=month).update(**changes):
            return
        try:
            with transaction.atomic():
                TokenUsage.objects.create(
                    organisation_id=organisation.id,
                    month=month,
                    input_tokens=usage.input_tokens,
                    output_tokens=usage.output_tokens,
                    total_tokens=usage.total_tokens,
                    calls=1,
                )
        except IntegrityError:  # another call created the row first
            TokenUsage.objects.for_organisation(organisation).filter(month=month).update(**changes)


def token_limit_reached(*, organisation: Organisation, at: datetime | None = None) -> bool:
    """True when the organisation has used its `monthly_token_limit` this month:
    further background windows are parked and turns fail before calling a model. A call
    under the limit may end above it; the next one is refused."""
    if organisation.monthly_token_limit is None:
        return False
    used = TokenUsage.objects.for_organisation(organisation).month_total(month=usage_month(at))
    return used >= organisation.monthly_token_limit
