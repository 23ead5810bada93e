"""Validation building blocks: strict serializers, time and map fields, and reading a
DRF error tree as (field path, message). The API's InputSerializers, the key and store
configurations and the memory tools' arguments are all checked with them."""
from typing import Any

from rest_framework import exceptions as drf
from rest_framework import serializers

from core_memory.base.storable import time_is_storable, unstorable_value


def serializer_defaults(serializer_class: type[serializers.Serializer]) -> dict:
    """Every field's default, nested serializers' too: a configuration's defaults are written
    once, in its serializer, and read from there. A nested serializer's own default (for
    example a switched-off block) is completed with the nested fields' defaults."""
    defaults: dict = {}
    for name, field in serializer_class().fields.items():
        if isinstance(field, serializers.Serializer):
            own = field.get_default() if field.default is not serializers.empty else {}
            defaults[name] = {**serializer_defaults(type(field)), **own}
        elif field.default is not serializers.empty:
            defaults[name] = field.get_default()
    return defaults


class StrictSerializer(serializers.Serializer):
    """Refuses fields it does not know, so a typo is a 400 naming it, not a silent default."""

    def to_internal_value(self, data):
        if isinstance(data, dict):
            unknown = [name for name in data if name not in self.fields]
            if unknown:
                raise serializers.ValidationError({unknown[0]: ["Unknown field."]})
        return super().to_internal_value(data)


class OffsetDateTimeField(serializers.DateTimeField):
    """ISO 8601 with an explicit offset; a naive time is refused (R-2.4, R-5.10)."""

    default_error_messages = {
        "naive": "Give the time in ISO 8601 with an offset, e.g. 2026-11-30T09:00:00+01:00.",
        "range": "Give a time between the years 1 and 9999.",
    }

    def to_internal_value(self, value):
        parsed = super().to_internal_value(value)
        if isinstance(value, str) and not _has_offset(value):
            self.fail("naive")
        if not time_is_storable(parsed):
            self.fail("range")
        return parsed

    def enforce_timezone(self, value):
        return value if value.tzinfo else super().enforce_timezone(value)


def _has_offset(text: str) -> bool:
    text = text.strip()
    if text.endswith(("Z", "z")):
        return True
    time_part = text.split("T", 1)[1] if "T" in text else (text.split(" ", 1)[1] if " " in text else "")
    return "+" in time_part or "-" in time_part


def refuse_unstorable(value) -> None:
    """A ValidationError at the path of what PostgreSQL cannot store (core_memory.base.storable).

    For interfaces without the API's parser in front (the console, services fed by code).
    """
    found = unstorable_value(value)
    if found is None:
        return
    path, message = found
    if not path:
        raise serializers.ValidationError(message)
    detail = [message]
    for part in reversed(path.replace("[", ".[").split(".")):
        detail = {int(part[1:-1]) if part.startswith("[") else part: detail}
    raise serializers.ValidationError(detail)


class StringMapField(serializers.DictField):
    """A flat JSON object of string keys to scalar values (metadata filters)."""

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        refuse_unstorable(value)
        for key, item in value.items():
            if not isinstance(item, (str, int, float, bool)) or item is None:
                raise serializers.ValidationError({key: ["Must be a string, number or boolean."]})
        return value


def first_error(detail: Any, path: str = "") -> tuple[str | None, str]:
    """The first (field path, message) in a DRF error tree: `a.b`, `tools[1]`, `tools[1].name`."""
    if isinstance(detail, dict):
        for key, value in detail.items():
            if key in ("non_field_errors", drf.ErrorDetail("non_field_errors")):
                child_path = path
            elif isinstance(key, int):
                # DRF's ListField reports items as {position: errors}.
                child_path = f"{path}[{key}]"
            else:
                child_path = f"{path}.{key}" if path else str(key)
            found_path, message = first_error(value, child_path)
            if message:
                return found_path, message
        return None, ""
    if isinstance(detail, list):
        if all(isinstance(item, (str, drf.ErrorDetail)) for item in detail):
            return (path or None), str(detail[0]) if detail else ""
        for position, item in enumerate(detail):
            if item in ({}, [], None, ""):
                continue
            found_path, message = first_error(item, f"{path}[{position}]")
            if message:
                return found_path, message
        return None, ""
    return (path or None), str(detail)
