import django_filters

from audit.models import AuditEvent


class AuditEventFilter(django_filters.FilterSet):
    """`action` exact; `after`/`before` bound `at` exclusively."""

    action = django_filters.CharFilter(field_name="action")
    after = django_filters.IsoDateTimeFilter(field_name="at", lookup_expr="gt")
    before = django_filters.IsoDateTimeFilter(field_name="at", lookup_expr="lt")

    class Meta:
        model = AuditEvent
        fields = ("action", "after", "before")
