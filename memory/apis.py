"""The record routes (SPEC §5): one view per resource, methods mapped to capabilities."""
from __future__ import annotations

from rest_framework import serializers, status
from rest_framework.exceptions import NotFound as DrfNotFound
from rest_framework.response import Response

from core_memory.api.pagination import IdCursorPagination, paginated_response
from core_memory.api.views import CoreApi
from core_memory.base.errors import InvalidRequest
from core_memory.base.validation import OffsetDateTimeField, StrictSerializer
from memory.answers import record_write_answer
from memory.models import MemoryRecord
from memory.selectors import (
    SEARCH_DEFAULT_LIMIT,
    SEARCH_MAX_LIMIT,
    record_get_available,
    record_history,
    record_list,
    record_search,
)
from memory.services import record_delete, record_update, record_write, records_retrieved
from stores.selectors import index_get_available

# `memory` needs `knowledge`: a key is checked for both.
MEMORY_CAPABILITIES = ("knowledge", "memory")
METADATA_PREFIX = "metadata."
EFFECTIVE_CONFIDENCE_DIGITS = 4
# 201 when a record was created or corrected, 200 when one was confirmed.
WRITE_STATUS_CODES = {"created": 201, "corrected": 201, "confirmed": 200}


class ProvenanceSerializer(serializers.Serializer):
    thread_id = serializers.CharField(allow_null=True)
    item_ids = serializers.ListField(child=serializers.CharField())
    response_id = serializers.CharField(allow_null=True)


class RecordFieldsSerializer(serializers.Serializer):
    """The stored fields of R-5.6's record shape that every historical version has too
    (not the retrieval count: a retrieval is no change, history leaves it out)."""

    id = serializers.CharField()
    index_id = serializers.CharField()
    subject = serializers.CharField(allow_null=True)
    type = serializers.CharField()
    text = serializers.CharField()
    metadata = serializers.JSONField()
    confidence = serializers.FloatField()
    contested = serializers.BooleanField()
    status = serializers.CharField()
    confirmations = serializers.IntegerField()
    last_confirmed_at = serializers.DateTimeField(allow_null=True)
    source = serializers.CharField()
    trusted = serializers.BooleanField()
    provenance = ProvenanceSerializer(source="*")
    due_at = serializers.DateTimeField(allow_null=True)
    done = serializers.BooleanField()
    structured = serializers.JSONField(allow_null=True)
    replaces = serializers.CharField(source="replaces_id", allow_null=True)
    replaced_by = serializers.CharField(source="replaced_by_id", allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class RecordOutputSerializer(RecordFieldsSerializer):
    """The record shape of R-5.6 (querysets carry the `effective_confidence` annotation)."""

    retrieval_count = serializers.IntegerField()
    effective_confidence = serializers.SerializerMethodField()

    def get_effective_confidence(self, record: MemoryRecord) -> float:
        return round(float(record.effective_confidence), EFFECTIVE_CONFIDENCE_DIGITS)


class MemoryListCreateApi(CoreApi):
    """`POST /v1/memory` (R-5.1–R-5.5) and `GET /v1/memory` (R-5.6)."""

    required_capabilities = MEMORY_CAPABILITIES

    class InputSerializer(StrictSerializer):
        index_id = serializers.CharField(max_length=40)
        type = serializers.CharField(max_length=40)
        text = serializers.CharField(max_length=20_000)
        metadata = serializers.DictField(required=False, default=dict)
        confidence = serializers.FloatField(min_value=0.0, max_value=1.0, default=1.0)
        due_at = OffsetDateTimeField(required=False, allow_null=True, default=None)
        replaces = serializers.RegexField(r"^mem_[0-9a-z]+$", required=False, allow_null=True, default=None)

    class FilterSerializer(StrictSerializer):
        index_id = serializers.CharField(max_length=40)
        type = serializers.ListField(child=serializers.CharField(max_length=40), required=False)
        subject = serializers.CharField(max_length=255, required=False)
        min_confidence = serializers.FloatField(min_value=0.0, max_value=1.0, required=False)
        after = OffsetDateTimeField(required=False)
        before = OffsetDateTimeField(required=False)
        contested = serializers.BooleanField(required=False, allow_null=True, default=None)
        status = serializers.ChoiceField(choices=[MemoryRecord.Status.ACTIVE, MemoryRecord.Status.ENDED], default="active")
        q = serializers.CharField(max_length=1000, required=False)
        limit = serializers.CharField(required=False)
        cursor = serializers.CharField(required=False)

    OutputSerializer = RecordOutputSerializer

    def get(self, request):
        filters = self._filters(request.query_params)
        index = index_get_available(key=self.key, index_id=filters["index_id"], param="index_id", right="read")
        records = record_list(key=self.key, index=index, subject=self.request_subject(), filters=filters)
        return paginated_response(queryset=records, request=request, view=self, serializer_class=self.OutputSerializer)

    def post(self, request):
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        subject = self.request_subject()
        index = index_get_available(key=self.key, index_id=data["index_id"], param="index_id")
        result = record_write(
            key=self.key,
            index=index,
            subject=subject,
            type=data["type"],
            text=data["text"],
            metadata=data["metadata"],
            confidence=data["confidence"],
            due_at=data["due_at"],
            replaces=data["replaces"],
            actor=self.principal.actor,
        )
        return Response(record_write_answer(result), status=WRITE_STATUS_CODES[result.status])

    def _filters(self, query_params) -> dict:
        raw: dict = {}
        metadata: dict[str, str] = {}
        for name in query_params:
            if name.startswith(METADATA_PREFIX):
                key = name[len(METADATA_PREFIX):]
                if not key:
                    raise InvalidRequest("Name the metadata key: metadata.<key>=<value>.", param=name)
                metadata[key] = query_params.get(name)
            elif name == "type":
                raw["type"] = query_params.getlist("type")
            else:
                raw[name] = query_params.get(name)
        serializer = self.FilterSerializer(data=raw)
        serializer.is_valid(raise_exception=True)
        return {**serializer.validated_data, "metadata": metadata}


class MemoryDetailApi(CoreApi):
    """`GET`, `PATCH` (R-5.7) and `DELETE` (R-5.8) `/v1/memory/{id}`."""

    required_capabilities = MEMORY_CAPABILITIES

    class InputSerializer(StrictSerializer):
        text = serializers.CharField(max_length=20_000, required=False)
        metadata = serializers.DictField(required=False)
        confidence = serializers.FloatField(min_value=0.0, max_value=1.0, required=False)
        due_at = OffsetDateTimeField(required=False, allow_null=True)
        done = serializers.BooleanField(required=False)

    OutputSerializer = RecordOutputSerializer

    def get(self, request, record_id: str):
        record = record_get_available(key=self.key, record_id=record_id, subject=self.request_subject(), right="read")
        return Response(self.OutputSerializer(record).data)

    def patch(self, request, record_id: str):
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        record_update(
            key=self.key, record_id=record_id, subject=self.request_subject(), actor=self.principal.actor, changes=serializer.validated_data
        )
        changed = record_get_available(key=self.key, record_id=record_id, subject=None)
        return Response(self.OutputSerializer(changed).data)

    def delete(self, request, record_id: str):
        record_delete(key=self.key, record_id=record_id, subject=self.request_subject(), actor=self.principal.actor)
        return Response(status=status.HTTP_204_NO_CONTENT)


class HistoryPagination(IdCursorPagination):
    ordering = ("-history_id",)

    def decode_cursor(self, request):
        # A tampered position would reach the integer column and fail there.
        cursor = super().decode_cursor(request)
        if cursor is not None and cursor.position is not None and not cursor.position.isdecimal():
            raise DrfNotFound(self.invalid_cursor_message)
        return cursor


class MemoryHistoryApi(CoreApi):
    """`GET /v1/memory/{id}/history`: every version, newest first (R-5.4)."""

    required_capabilities = MEMORY_CAPABILITIES

    class OutputSerializer(RecordFieldsSerializer):
        """A version: the record's stored fields then, and what changed it, when, by whom."""

        history_id = serializers.IntegerField()
        history_date = serializers.DateTimeField()
        change = serializers.SerializerMethodField()
        actor = serializers.SerializerMethodField()
        changed_at = serializers.DateTimeField()

        def get_change(self, version) -> str:
            return (version.history_change_reason or "").rpartition(" by ")[0]

        def get_actor(self, version) -> str | None:
            return (version.history_change_reason or "").rpartition(" by ")[2] or None

    def get(self, request, record_id: str):
        record = record_get_available(key=self.key, record_id=record_id, subject=self.request_subject(), right="read")
        return paginated_response(
            queryset=record_history(record=record),
            request=request,
            view=self,
            serializer_class=self.OutputSerializer,
            pagination_class=HistoryPagination,
        )


class MemorySearchApi(CoreApi):
    """`POST /v1/memory/search` (R-5.10): needs the read right only."""

    required_capabilities = MEMORY_CAPABILITIES

    class InputSerializer(StrictSerializer):
        index_id = serializers.CharField(max_length=40)
        query = serializers.CharField(max_length=2000)
        types = serializers.ListField(child=serializers.CharField(max_length=40), required=False, default=None)
        after = OffsetDateTimeField(required=False, default=None)
        before = OffsetDateTimeField(required=False, default=None)
        limit = serializers.IntegerField(min_value=1, max_value=SEARCH_MAX_LIMIT, default=SEARCH_DEFAULT_LIMIT)

    class OutputSerializer(RecordOutputSerializer):
        score = serializers.FloatField()

    def post(self, request):
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        index = index_get_available(key=self.key, index_id=data["index_id"], param="index_id", right="read")
        subject = self.request_subject()
        hits = record_search(
            key=self.key,
            index=index,
            subject=subject,
            query=data["query"],
            types=data["types"],
            after=data["after"],
            before=data["before"],
            limit=data["limit"],
            all_subjects=subject is None,
        )
        records_retrieved(key=self.key, records=[record for record, _ in hits])
        for record, score in hits:
            record.score = round(score, EFFECTIVE_CONFIDENCE_DIGITS)
        return Response({"data": self.OutputSerializer([record for record, _ in hits], many=True).data})
