"""The record list's filters, applied to a queryset annotated with
`effective_confidence`; the API validates the values first (memory.apis)."""
import django_filters
from django.db.models.fields.json import KeyTextTransform

from memory.models import MemoryRecord
from memory.search import records_matching


class MemoryRecordFilter(django_filters.FilterSet):
    """`type` any of the given; `min_confidence` on the effective value;
    `after`/`before` bound `created_at` exclusively; `metadata` every key/value; `q` full
    text, every word (the search route, ranks by some of them instead)."""

    status = django_filters.CharFilter(field_name="status")
    type = django_filters.Filter(method="filter_types")
    subject = django_filters.CharFilter(field_name="subject")
    min_confidence = django_filters.NumberFilter(field_name="effective_confidence", lookup_expr="gte")
    after = django_filters.IsoDateTimeFilter(field_name="created_at", lookup_expr="gt")
    before = django_filters.IsoDateTimeFilter(field_name="created_at", lookup_expr="lt")
    contested = django_filters.BooleanFilter(field_name="contested")
    metadata = django_filters.Filter(method="filter_metadata")
    q = django_filters.CharFilter(method="filter_text")

    class Meta:
        model = MemoryRecord
        fields = ("status", "type", "subject", "min_confidence", "after", "before", "contested", "metadata", "q")

    def filter_types(self, queryset, name, value: list[str]):
        return queryset.filter(type__in=value)

    def filter_metadata(self, queryset, name, value: dict):
        # Compared as text, so `metadata.priority=2` matches the number 2 and `=true` the boolean.
        for position, (key, expected) in enumerate(sorted(value.items())):
            alias = f"metadata_filter_{position}"
            queryset = queryset.alias(**{alias: KeyTextTransform(key, "metadata")}).filter(**{alias: expected})
        return queryset

    def filter_text(self, queryset, name, value: str):
        return records_matching(queryset, text=value)
