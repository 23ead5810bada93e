"""The validation building blocks (core_memory.base.validation): times with any offset
ISO 8601 allows, and JSON types taken as they are written (R-2.4, R-12.3)."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from rest_framework import serializers

from core_memory.base.validation import OffsetDateTimeField, StrictSerializer


@pytest.mark.parametrize(
    ("text", "utc"),
    [
        ("2026-01-01T00:00:00+17:47", datetime(2025, 12, 31, 6, 13, tzinfo=timezone.utc)),
        ("2026-01-01T00:00:00-23:59", datetime(2026, 1, 1, 23, 59, tzinfo=timezone.utc)),
        ("2026-01-01T00:00:00+15:59", datetime(2025, 12, 31, 8, 1, tzinfo=timezone.utc)),
    ],
)
def test_a_time_with_an_offset_postgresql_cannot_take_is_read_as_the_same_instant_in_utc(text, utc):
    """R-2.4, R-12.3: PostgreSQL refuses displacements beyond ±15:59 (a 500 before); the instant
    is what counts, so it is kept in UTC."""
    parsed = OffsetDateTimeField().to_internal_value(text)

    assert parsed == utc
    assert parsed.utcoffset() == timedelta(0)


class _Typed(StrictSerializer):
    name = serializers.CharField()
    ratio = serializers.FloatField(required=False)
    count = serializers.IntegerField(required=False)
    flag = serializers.BooleanField(required=False)
    names = serializers.ListField(child=serializers.CharField(), required=False)


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"name": 5}, "name"),
        ({"name": 5.5}, "name"),
        ({"name": "a", "ratio": True}, "ratio"),
        ({"name": "a", "ratio": "0.5"}, "ratio"),
        ({"name": "a", "count": "3"}, "count"),
        ({"name": "a", "count": 3.5}, "count"),
        ({"name": "a", "count": False}, "count"),
        ({"name": "a", "flag": 1}, "flag"),
        ({"name": "a", "flag": "true"}, "flag"),
        ({"name": "a", "names": ["x", 2]}, "names"),
    ],
)
def test_a_json_value_of_another_type_is_refused_not_converted(body, param):
    """R-12.3: `"confidence": true` is not 1.0 and a number is not a name."""
    serializer = _Typed(data=body)

    assert not serializer.is_valid()
    assert param in serializer.errors


def test_values_of_the_declared_types_pass():
    serializer = _Typed(data={"name": "a", "ratio": 1, "count": 3, "flag": False, "names": ["x"]})

    assert serializer.is_valid(), serializer.errors
    assert serializer.validated_data == {"name": "a", "ratio": 1.0, "count": 3, "flag": False, "names": ["x"]}
