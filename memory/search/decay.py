"""A record's effective confidence: its stored confidence decayed by its age, per type, at the
half-lives the key sets. A SQL expression, so that search, the block
and the lists filter and order on it in PostgreSQL."""
from __future__ import annotations

import math
from datetime import datetime

from django.db.models import Case, DateTimeField, F, FloatField, Func, Q, QuerySet, Value, When
from django.db.models.lookups import GreaterThanOrEqual
from django.utils import timezone

from core_memory.keys.models import ApiKey
from memory.models import MemoryRecord

# Ranking ties in every section: effective confidence, then retrieval count, then id.
TIE_BREAKERS = ("-effective_confidence", "-retrieval_count", "id")


def key_half_lives(*, key: ApiKey) -> dict[str, float]:
    decay = (key.memory or {}).get("decay") or {}
    return dict(decay.get("half_life_days") or {})


class _AgeDays(Func):
    """Days from `changed_at` to `now`, never negative (a clock a bit behind is not youth)."""

    arg_joiner = " - "
    template = "GREATEST(EXTRACT(EPOCH FROM (%(expressions)s))::double precision / 86400.0, 0.0)"
    output_field = FloatField()


# Beyond 2 ** -1000 a double nears underflow, on which PostgreSQL raises rather than
# rounding to zero; an effective value that small is read as 0.
_LEAST_HALVINGS_TO_ZERO = 1000.0


def effective_confidence_expression(*, half_life_days: dict[str, float], now: datetime | None = None):
    """`confidence * 0.5 ^ (age_days / half_life)` for the types that have a half-life.

    A SQL expression (annotate it as `effective_confidence`), so filtering and ordering
    on the effective value happen in PostgreSQL. Age counts from `changed_at`. A value
    more than 1000 halvings below 1 (counting the stored confidence's own, log2) is 0.
    """
    if not half_life_days:
        return Func(F("confidence"), template="%(expressions)s", output_field=FloatField())
    age_days = _AgeDays(Value(now or timezone.now(), output_field=DateTimeField()), F("changed_at"))

    def decayed(half_life: float):
        halvings = age_days / Value(float(half_life))
        own_halvings = Func(F("confidence"), function="ln", output_field=FloatField()) / Value(-math.log(2))
        return Case(
            When(Q(confidence__lte=0.0), then=Value(0.0)),
            When(
                GreaterThanOrEqual(halvings + own_halvings, Value(_LEAST_HALVINGS_TO_ZERO)),
                then=Value(0.0),
            ),
            default=F("confidence") * Func(Value(0.5), halvings, function="power", output_field=FloatField()),
            output_field=FloatField(),
        )

    return Case(
        *[When(type=type_name, then=decayed(half_life)) for type_name, half_life in sorted(half_life_days.items())],
        default=F("confidence"),
        output_field=FloatField(),
    )


def records_with_decay(queryset: QuerySet[MemoryRecord], *, key: ApiKey, now: datetime | None = None) -> QuerySet[MemoryRecord]:
    return queryset.annotate(effective_confidence=effective_confidence_expression(half_life_days=key_half_lives(key=key), now=now))
