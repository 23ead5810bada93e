"""The key's `memory` configuration, validated to its documented shape.

The same `injection` shape is an agent version's `memory_injection`.
Validation fills every default, so stored configurations are always complete.
"""
import re

from django.core.validators import RegexValidator
from django.utils.translation import gettext, gettext_lazy
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core_memory.base.validation import StrictSerializer, StringMapField, serializer_defaults

TYPE_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,39}$")


# A validator the API document reads as the field's `pattern`.
validate_type_name = RegexValidator(TYPE_PATTERN, message=gettext_lazy("A type is lower-case: [a-z][a-z0-9_]{0,39}."))


class InjectionConfigSerializer(StrictSerializer):
    enabled = serializers.BooleanField(default=True)
    index_id = serializers.CharField(allow_null=True, default=None, max_length=40)
    types = serializers.ListField(child=serializers.CharField(validators=[validate_type_name]), default=list)
    metadata = StringMapField(default=dict)
    min_confidence = serializers.FloatField(min_value=0.0, max_value=1.0, default=0.0)
    limit = serializers.IntegerField(min_value=0, max_value=500, default=20)
    token_budget = serializers.IntegerField(min_value=0, max_value=200_000, default=1500)

    def validate(self, attrs):
        if attrs["enabled"] and not attrs.get("index_id"):
            raise serializers.ValidationError({"index_id": [gettext("An enabled injection block names its index.")]})
        return attrs


@extend_schema_field(
    {
        "type": "object",
        "description": f"Record type (`{TYPE_PATTERN.pattern}`) → half-life in days.",
        "additionalProperties": {"type": "number", "minimum": 0.001, "maximum": 36_500},
    }
)
class HalfLivesField(serializers.DictField):
    """Type name → half-life in days."""


class DecayConfigSerializer(StrictSerializer):
    half_life_days = HalfLivesField(
        child=serializers.FloatField(min_value=0.001, max_value=36_500), default=dict
    )

    def validate_half_life_days(self, value):
        for type_name in value:
            if not TYPE_PATTERN.match(type_name):
                raise serializers.ValidationError({type_name: [gettext("A type is lower-case: [a-z][a-z0-9_]{0,39}.")]})
        return value


class MemoryConfigSerializer(StrictSerializer):
    retrieval_tool = serializers.BooleanField(default=True)
    write_tool = serializers.BooleanField(default=False)
    injection = InjectionConfigSerializer(default=lambda: {"enabled": False, "index_id": None})
    decay = DecayConfigSerializer(default=lambda: {"half_life_days": {}})


def injection_block_defaults() -> dict:
    """An injection block's defaults, for blocks stored before a field existed."""
    return serializer_defaults(InjectionConfigSerializer)


def memory_config_defaults() -> dict:
    """A key's `memory` configuration when nothing is set."""
    return serializer_defaults(MemoryConfigSerializer)


def memory_config_normalise(raw: dict | None) -> dict:
    """A complete configuration from a partial one (raises ValidationError)."""
    serializer = MemoryConfigSerializer(data=raw or {})
    serializer.is_valid(raise_exception=True)
    data = serializer.validated_data
    injection = data["injection"]
    if not isinstance(injection, dict) or "limit" not in injection:
        injection_serializer = InjectionConfigSerializer(data=injection)
        injection_serializer.is_valid(raise_exception=True)
        injection = injection_serializer.validated_data
    decay = data["decay"]
    return {
        "retrieval_tool": data["retrieval_tool"],
        "write_tool": data["write_tool"],
        "injection": dict(injection),
        "decay": {"half_life_days": dict(decay.get("half_life_days", {}))},
    }
