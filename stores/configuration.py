"""A memory store's sections, validated to their documented shape.

Validation fills every default: sending a section replaces it whole, so a field
left out returns to its default. The API and the console validate through here.
"""
from __future__ import annotations

import copy
import functools

from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core_memory.base.validation import StrictSerializer, refuse_unstorable, serializer_defaults

RANKS = ("confidence", "relevance", "blend")
MAX_TOKEN_BUDGET = 200_000
MAX_ORGANISATION_SHARE = 0.4

# What the console calls the types Core knows; a switch's own types show as they are
# named. Settings per type (half-lives, a store's sections) show a field for each.
TYPE_LABELS = {
    "fact": _("fact"),
    "preference": _("preference"),
    "commitment": _("commitment"),
    "behaviour": _("behaviour"),
    "episode": _("episode"),
    "lesson": _("lesson"),
}


class StrictBooleanField(serializers.BooleanField):
    """Only JSON true/false: "yes" or 1 for a switch is a typo, not a choice."""

    def to_internal_value(self, data):
        if not isinstance(data, bool):
            self.fail("invalid", input=data)
        return data


class CommitmentsSectionSerializer(StrictSerializer):
    inject_limit = serializers.IntegerField(min_value=0, max_value=500, default=5)


class InjectionSectionSerializer(StrictSerializer):
    token_budget = serializers.IntegerField(min_value=0, max_value=MAX_TOKEN_BUDGET, allow_null=True, default=None)
    organisation_share = serializers.FloatField(min_value=0.0, max_value=MAX_ORGANISATION_SHARE, default=MAX_ORGANISATION_SHARE)
    rank = serializers.ChoiceField(choices=RANKS, default="confidence")
    episodes_limit = serializers.IntegerField(min_value=0, max_value=500, default=0)
    commitments = CommitmentsSectionSerializer(default=lambda: serializer_defaults(CommitmentsSectionSerializer))


class LessonsSectionSerializer(StrictSerializer):
    enabled = StrictBooleanField(default=False)
    min_episodes = serializers.IntegerField(min_value=1, max_value=1000, default=3)


class LabelsField(serializers.DictField):
    """Label name to label value, both strings; they become metadata of promoted records."""

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        refuse_unstorable(value)
        for name, label in value.items():
            if not 1 <= len(name) <= 100:
                raise serializers.ValidationError({name: [gettext("A label name is 1 to 100 characters.")]})
            if not isinstance(data[name], str) or len(label) > 500:
                raise serializers.ValidationError({name: [gettext("A label value is a string of at most 500 characters.")]})
        return value


class PromotionSectionSerializer(StrictSerializer):
    enabled = StrictBooleanField(default=False)
    labels = LabelsField(
        child=serializers.CharField(allow_blank=True),
        default=dict,
        help_text="Label name (1 to 100 characters) to value (at most 500): metadata of the records it promotes.",
    )


class MaintenanceSectionSerializer(StrictSerializer):
    enabled = StrictBooleanField(default=True)


@extend_schema_field(
    {
        "type": "object",
        "description": "Record type → days a record of it stays true after it is written, unless the write says `expires_at`.",
        "additionalProperties": {"type": "number", "minimum": 0.001, "maximum": 36_500},
    }
)
class LifetimesField(serializers.DictField):
    """Type name → days."""


class ExpirySectionSerializer(StrictSerializer):
    lifetime_days = LifetimesField(child=serializers.FloatField(min_value=0.001, max_value=36_500), default=dict)

    def validate_lifetime_days(self, value):
        refuse_unstorable(value)
        for type_name in value:
            if not 1 <= len(type_name) <= 40:
                raise serializers.ValidationError({type_name: [gettext("A type is 1 to 40 characters.")]})
        return value


SECTION_SERIALIZERS: dict[str, type[StrictSerializer]] = {
    "injection": InjectionSectionSerializer,
    "lessons": LessonsSectionSerializer,
    "promotion": PromotionSectionSerializer,
    "maintenance": MaintenanceSectionSerializer,
    "expiry": ExpirySectionSerializer,
}


class StoreSectionsSerializer(StrictSerializer):
    """Any of the sections; each one sent is complete after validation."""

    injection = InjectionSectionSerializer(required=False)
    lessons = LessonsSectionSerializer(required=False)
    promotion = PromotionSectionSerializer(required=False)
    maintenance = MaintenanceSectionSerializer(required=False)
    expiry = ExpirySectionSerializer(required=False)


def section_defaults(name: str) -> dict:
    """A section as it is before anything is sent: its serializer's defaults. Read
    once per process (building the serializers took ~3% of a turn, which reads the block's
    defaults each time); each caller gets its own copy to change."""
    return copy.deepcopy(_section_defaults(name))


@functools.cache
def _section_defaults(name: str) -> dict:
    return serializer_defaults(SECTION_SERIALIZERS[name])


def _plain(value):
    if isinstance(value, dict):
        return {name: _plain(item) for name, item in value.items()}
    return value


def store_sections_normalise(raw: dict) -> dict:
    """The named sections, complete (raises ValidationError with the field path)."""
    serializer = StoreSectionsSerializer(data=raw)
    serializer.is_valid(raise_exception=True)
    return {name: _plain(section) for name, section in serializer.validated_data.items()}
