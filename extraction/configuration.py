"""An extraction switch's shape, validated for the API and the console alike.

Shapes and wrong types are 400s naming the field; the rules that need
the organisation's rows (offered models, agents, keys) are the service's 422s.
"""
from __future__ import annotations

from django.utils.translation import gettext
from rest_framework import serializers

from core_memory.base.validation import StrictSerializer
from core_memory.keys.configuration import validate_type_name
from memory.selectors import DEFAULT_TYPES
from stores.configuration import StrictBooleanField

THREADS_CHOICES = ("with_person", "all")
MAX_INSTRUCTIONS = 20_000
MAX_FILTER_IDS = 500
# A week: a switch that runs less often than that is a switch that should be off.
MAX_SCHEDULE_MINUTES = 7 * 24 * 60


class StrictIntegerField(serializers.IntegerField):
    """Only a JSON integer: "60" or 60.0 for a schedule is a type error, not a value."""

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictCharField(serializers.CharField):
    """Only a JSON string: 7 for a model id is a type error, not the model "7"."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class IdListField(serializers.ListField):
    child = StrictCharField(max_length=40)


class FiltersSerializer(StrictSerializer):
    key_ids = IdListField(default=list, max_length=MAX_FILTER_IDS)
    agent_ids = IdListField(default=list, max_length=MAX_FILTER_IDS)


class SwitchSerializer(StrictSerializer):
    """The body of `PUT /v1/memory/stores/{index_id}/extraction`, every default filled in."""

    enabled = StrictBooleanField()
    model = StrictCharField(max_length=200, required=False)
    instructions = StrictCharField(max_length=MAX_INSTRUCTIONS, allow_blank=True, default="", trim_whitespace=False)
    types = serializers.ListField(
        child=StrictCharField(validators=[validate_type_name]), min_length=1, max_length=50, default=lambda: list(DEFAULT_TYPES)
    )
    schedule_minutes = StrictIntegerField(min_value=1, max_value=MAX_SCHEDULE_MINUTES, default=60)
    threads = serializers.ChoiceField(choices=THREADS_CHOICES, default="with_person")
    episodes = StrictBooleanField(default=False)
    lessons = StrictBooleanField(default=False)
    filters = FiltersSerializer(default=lambda: {"key_ids": [], "agent_ids": []})

    def validate_types(self, value: list[str]) -> list[str]:
        # The first mention counts; a type named twice is still one type.
        return list(dict.fromkeys(value))

    def validate(self, attrs):
        if attrs["enabled"] and not attrs.get("model"):
            raise serializers.ValidationError({"model": [gettext("This field is required when the switch is enabled.")]})
        return attrs
