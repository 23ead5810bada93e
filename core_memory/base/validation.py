"""Validation building blocks: strict serializers, time and map fields, and reading a
DRF error tree as (field path, message). The API's InputSerializers, the key and store
configurations and the memory tools' arguments are all checked with them."""
import zoneinfo
from datetime import timezone
from typing import Any

from django.utils.translation import gettext
from drf_spectacular.utils import extend_schema_field
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
    """Refuses fields it does not know, so a typo is a 400 naming it, not a silent default,
    and takes JSON values as they are typed: DRF would read `true` as the number 1.0, `5` as
    the name "5" and `"true"` as a boolean. Query parameters are all text; their serializers
    set `json_types = False`."""

    json_types = True

    def to_internal_value(self, data):
        if isinstance(data, dict):
            unknown = [name for name in data if name not in self.fields]
            if unknown:
                raise serializers.ValidationError({unknown[0]: ["Unknown field."]})
            if self.json_types:
                for name, field in self.fields.items():
                    if name in data and not field.read_only:
                        detail = json_type_error(field, data[name])
                        if detail:
                            raise serializers.ValidationError({name: detail})
        return super().to_internal_value(data)


_TEXT_FIELDS = (serializers.CharField, serializers.DateTimeField, serializers.DateField, serializers.TimeField)


def json_type_error(field: serializers.Field, value):
    """Why `value`, as JSON decoded it, is not of the type `field` declares, as a DRF error
    detail (`[message]`, or `{position or key: detail}` inside a list or a map); None when it is.

    Nested serializers check their own fields; lists and maps check each item against their child.
    """
    if value is None:
        return None  # `allow_null` is the field's own business
    if isinstance(field, serializers.BooleanField):
        fits = isinstance(value, bool)
    elif isinstance(field, serializers.IntegerField):
        fits = not isinstance(value, bool) and (isinstance(value, int) or (isinstance(value, float) and value.is_integer()))
    elif isinstance(field, (serializers.FloatField, serializers.DecimalField)):
        fits = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif isinstance(field, serializers.ChoiceField):
        fits = isinstance(value, str) or not all(isinstance(choice, str) for choice in field.choices)
    elif isinstance(field, _TEXT_FIELDS):
        fits = isinstance(value, str)
    elif isinstance(field, serializers.ListField) and isinstance(value, list):
        for position, item in enumerate(value):
            detail = json_type_error(field.child, item)
            if detail:
                return {position: detail}
        return None
    elif isinstance(field, serializers.DictField) and isinstance(value, dict):
        for key, item in value.items():
            detail = json_type_error(field.child, item)
            if detail:
                return {key: detail}
        return None
    else:
        return None
    if fits:
        return None
    return [field.error_messages.get("invalid") or field.error_messages.get("invalid_choice", "Wrong type.").format(input=value)]


class OffsetDateTimeField(serializers.DateTimeField):
    """ISO 8601 with an explicit offset; a naive time is refused."""

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
        # The instant in UTC: PostgreSQL refuses offsets beyond ±15:59, which ISO 8601 allows.
        return parsed.astimezone(timezone.utc)

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


_TIME_ZONES = sorted(zoneinfo.available_timezones())


@extend_schema_field({"type": "string", "enum": _TIME_ZONES})
class TimeZoneField(serializers.CharField):
    """An IANA time zone name (the API document lists them)."""

    default_error_messages = {"zone": "Give an IANA time zone, e.g. Europe/Amsterdam."}

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if value not in _TIME_ZONES_SET:
            self.fail("zone")
        return value


_TIME_ZONES_SET = frozenset(_TIME_ZONES)


@extend_schema_field({"type": "object", "additionalProperties": {"oneOf": [{"type": "string"}, {"type": "number"}, {"type": "boolean"}]}})
class StringMapField(serializers.DictField):
    """A flat JSON object of string keys to scalar values (metadata filters)."""

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        refuse_unstorable(value)
        for key, item in value.items():
            if not isinstance(item, (str, int, float, bool)) or item is None:
                raise serializers.ValidationError({key: [gettext("Must be a string, number or boolean.")]})
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
