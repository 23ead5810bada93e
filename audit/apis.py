from rest_framework import serializers

from audit.selectors import audit_event_list
from core_memory.base.api.pagination import IdCursorPagination, ListQuerySerializer, paginated_response, query_parameters_read
from core_memory.base.api.views import CoreApi
from core_memory.base.validation import OffsetDateTimeField


class AuditEventListApi(CoreApi):
    """`GET /v1/audit?action=&after=&before=`: the caller's organisation only."""

    required_capabilities = ("management",)
    pagination_class = IdCursorPagination

    class FilterSerializer(ListQuerySerializer):
        action = serializers.CharField(max_length=64, required=False)
        after = OffsetDateTimeField(required=False)
        before = OffsetDateTimeField(required=False)

    class OutputSerializer(serializers.Serializer):
        id = serializers.CharField()
        at = serializers.DateTimeField()
        actor = serializers.CharField()
        action = serializers.CharField()
        target = serializers.CharField()
        details = serializers.JSONField()

    def get(self, request):
        """Read the audit log

        The organisation's audit events, newest first: who (`actor`: a key id or
        `console:<username>`) did what (`action`, e.g. `memory.write_denied`, `key.revoked`,
        `person.erased`) to what (`target`), when. `after`/`before` are exclusive bounds on `at`.
        Needs `management`.
        """
        filters = query_parameters_read(request.query_params, self.FilterSerializer)
        return paginated_response(
            queryset=audit_event_list(caller=self.principal, filters=filters),
            request=request,
            view=self,
            serializer_class=self.OutputSerializer,
        )
