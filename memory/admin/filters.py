"""The record list's filters: index, type, person, decay as read by a key, and which dates."""
from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.views.main import ChangeList
from django.utils.translation import gettext_lazy as _

from core_memory.keys.models import ApiKey
from memory.models import type_label
from memory.search.decay import key_half_lives
from stores.models import KnowledgeIndex

DECAY_KEY_VAR = "decay_key"
NO_DECAY = "-"  # the decay filter's value for reading the stored confidence
DATES_VAR = "dates"
SHARED = "-"  # the person filter's value for shared records (no subject is "-")


class IndexListFilter(admin.RelatedFieldListFilter):
    """Her organisation's live indexes only, also those that hold no record yet."""

    def field_choices(self, field, request, model_admin):
        indexes = model_admin.scoped(KnowledgeIndex, request).live().order_by("name")
        return [(index.pk, str(index)) for index in indexes]


class PersonListFilter(admin.SimpleListFilter):
    title = _("person")
    parameter_name = "person"

    def lookups(self, request, model_admin):
        subjects = (
            model_admin.get_queryset(request)
            .filter(subject__isnull=False)
            .order_by("subject")
            .values_list("subject", flat=True)
            .distinct()
        )
        return [(SHARED, _("shared")), *[(subject, subject) for subject in subjects]]

    def queryset(self, request, queryset):
        if self.value() == SHARED:
            return queryset.filter(subject__isnull=True)
        if self.value():
            return queryset.filter(subject=self.value())
        return queryset


class DecayListFilter(admin.SimpleListFilter):
    """Whose half-lives the effective confidence uses; MemoryRecordAdmin.get_queryset applies them.
    "All" is the organisation's default half-lives."""

    title = _("decay as read by key")
    parameter_name = DECAY_KEY_VAR

    def lookups(self, request, model_admin):
        keys = model_admin.scoped(ApiKey, request).order_by("name")
        return [(NO_DECAY, _("no decay (stored confidence)"))] + [
            (key.pk, f"{key.name} ({key.pk})") for key in keys if key_half_lives(key=key)
        ]

    def choices(self, changelist):
        choices = list(super().choices(changelist))
        choices[0]["display"] = _("the organisation's default half-lives")
        return choices

    def queryset(self, request, queryset):
        return queryset


class TypeListFilter(admin.SimpleListFilter):
    """The types her records have, by their translated names."""

    title = _("type")
    parameter_name = "type"

    def lookups(self, request, model_admin):
        types = model_admin.get_queryset(request).order_by("type").values_list("type", flat=True).distinct()
        return [(type_name, type_label(type_name)) for type_name in types]

    def queryset(self, request, queryset):
        return queryset.filter(type=self.value()) if self.value() else queryset


class DatesListFilter(admin.SimpleListFilter):
    """Which date the list's date hierarchy walks: created (default) or last updated."""

    title = _("dates by")
    parameter_name = DATES_VAR

    def lookups(self, request, model_admin):
        return [("updated", _("last updated"))]

    def choices(self, changelist):
        choices = list(super().choices(changelist))
        choices[0]["display"] = _("created")
        return choices

    def queryset(self, request, queryset):
        return queryset


class RecordChangeList(ChangeList):
    """The record list, whose date hierarchy follows the "dates by" filter."""

    def __init__(self, request, model, list_display, list_display_links, list_filter, date_hierarchy, *args, **kwargs):
        if request.GET.get(DATES_VAR) == "updated":
            date_hierarchy = "updated_at"
        super().__init__(request, model, list_display, list_display_links, list_filter, date_hierarchy, *args, **kwargs)
