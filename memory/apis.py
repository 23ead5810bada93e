"""The record routes: one view per resource, methods mapped to capabilities."""
from __future__ import annotations

from dataclasses import replace

from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.parsers import BaseParser
from rest_framework.response import Response

from core_memory.base.api.exceptions import error_body
from core_memory.base.api.pagination import IdCursorPagination, ListQuerySerializer, paginated_response
from core_memory.base.api.schema import error_responses
from core_memory.base.api.views import CoreApi
from core_memory.base.errors import InvalidRequest
from core_memory.base.validation import OffsetDateTimeField, StrictSerializer
from memory.answers import (
    EFFECTIVE_CONFIDENCE_DIGITS,
    WRITE_STATUS_CODES,
    RecordInputSerializer,
    record_answer,
    record_draft,
    record_write_answer,
)
from memory.importing import FORMATS, MAX_REPORTED_ERRORS, ImportFailed, json_lines_split, records_import
from memory.models import MemoryRecord
from memory.search import SEARCH_DEFAULT_LIMIT, SEARCH_MAX_LIMIT, SearchFilters
from memory.selectors import change_reason_parts, record_get_available, record_history, record_list
from memory.retrieval import records_search_retrieve
from memory.search.as_of import record_as_of, record_search_as_of
from memory.search.question import SearchTrace
from memory.services.changes import record_delete, record_update
from memory.services.writes import record_write
from stores.selectors import index_get_available

# `memory` needs `knowledge`: a key is checked for both.
MEMORY_CAPABILITIES = ("knowledge", "memory")
METADATA_PREFIX = "metadata."


class ProvenanceSerializer(serializers.Serializer):
    thread_id = serializers.CharField(allow_null=True)
    item_ids = serializers.ListField(child=serializers.CharField())
    response_id = serializers.CharField(allow_null=True)


class RecordFieldsSerializer(serializers.Serializer):
    """The stored fields of the API's record shape that every historical version has too
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
    expires_at = serializers.DateTimeField(allow_null=True, help_text="When it stops being true; null: never.")
    structured = serializers.JSONField(allow_null=True)
    replaces = serializers.CharField(source="replaces_id", allow_null=True)
    replaced_by = serializers.CharField(source="replaced_by_id", allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class RecordOutputSerializer(RecordFieldsSerializer):
    """The record shape every record route answers (querysets carry the `effective_confidence` annotation)."""

    retrieval_count = serializers.IntegerField()
    effective_confidence = serializers.SerializerMethodField()

    def get_effective_confidence(self, record: MemoryRecord) -> float:
        return round(float(record.effective_confidence), EFFECTIVE_CONFIDENCE_DIGITS)


class WriteAnswerSerializer(serializers.Serializer):
    """The answer to a write, also the write tool's result."""

    memory_id = serializers.CharField()
    status = serializers.ChoiceField(choices=["created", "confirmed", "corrected"])
    type = serializers.CharField()
    text = serializers.CharField()
    confidence = serializers.FloatField()
    subject = serializers.CharField(allow_null=True)
    index_id = serializers.CharField()
    created_at = serializers.DateTimeField()


class AsOfField(OffsetDateTimeField):
    """A moment in the past to answer as of; one ahead is a 400."""

    def __init__(self, **kwargs):
        kwargs.setdefault("required", False)
        kwargs.setdefault("help_text", "Answer as memory stood at this moment (ISO 8601 with an offset, not in the future).")
        super().__init__(**kwargs)

    def to_internal_value(self, value):
        moment = super().to_internal_value(value)
        if moment > timezone.now():
            raise serializers.ValidationError("as_of must not lie in the future.")
        return moment


INDEX_NOT_FOUND = "No such index for this key (also: another organisation's, deleted, or not in the key's policy)."


class MemoryListCreateApi(CoreApi):
    """`POST /v1/memory` and `GET /v1/memory`."""

    required_capabilities = MEMORY_CAPABILITIES
    query_parameter_prefixes = (METADATA_PREFIX,)
    pagination_class = IdCursorPagination

    class InputSerializer(RecordInputSerializer):
        index_id = serializers.CharField(max_length=40)

    class FilterSerializer(ListQuerySerializer):
        index_id = serializers.CharField(max_length=40)
        type = serializers.ListField(child=serializers.CharField(max_length=40), required=False)
        subject = serializers.CharField(max_length=255, required=False)
        min_confidence = serializers.FloatField(min_value=0.0, max_value=1.0, required=False)
        after = OffsetDateTimeField(required=False)
        before = OffsetDateTimeField(required=False)
        contested = serializers.BooleanField(required=False, allow_null=True, default=None)
        status = serializers.ChoiceField(choices=[MemoryRecord.Status.ACTIVE, MemoryRecord.Status.ENDED], default="active")
        q = serializers.CharField(max_length=1000, required=False)
        expired = serializers.BooleanField(
            required=False, default=False, help_text="`true` lists expired records too (their `expires_at` passed); by default they are left out."
        )
        as_of = AsOfField()

    OutputSerializer = RecordOutputSerializer

    @extend_schema(responses={200: RecordOutputSerializer(many=True), **error_responses(404, e404=INDEX_NOT_FOUND)})
    def get(self, request):
        """List records

        The records of one index, newest first, that the request may see: with a person
        (`X-Core-Subject` or a subject token) hers and the shared ones, without one every record.
        `min_confidence` filters on the effective confidence (after decay). Filter on metadata with
        `metadata.<key>=<value>` (repeatable, every pair must match). Expired records (their
        `expires_at` passed) are left out unless `expired=true`. With `as_of` the records as they
        stood then, from their history (also those ended or deleted since), with today's rights.
        Needs the `memory` capability and the policy's read right on the index.
        """
        filters = self._filters(request.query_params)
        index = index_get_available(caller=self.caller, index_id=filters["index_id"], param="index_id", right="read")
        records = record_list(caller=self.caller, index=index, filters=filters)
        return paginated_response(queryset=records, request=request, view=self, serializer_class=self.OutputSerializer)

    @extend_schema(
        responses={
            201: OpenApiResponse(WriteAnswerSerializer, description="A record was created (`status: created`) or corrected (`status: corrected`)."),
            200: OpenApiResponse(WriteAnswerSerializer, description="An active record had the same text: it is confirmed (`status: confirmed`)."),
            **error_responses(404, 422, e404=INDEX_NOT_FOUND + " Or `replaces` names no record of hers in it.", e422=(
                "The type is not one of the store's known types (the message lists them; `episode` and `lesson` "
                "are written only by Core), or the `Idempotency-Key` was used with another body."
            )),
        }
    )
    def post(self, request):
        """Write a record

        Remembers one thing in an index, for the request's person (shared when the request names
        nobody). The same text (case, spaces and final punctuation aside) as an active record of the
        same index, person and type **confirms** that record instead: 200 with `"status": "confirmed"`
        and its id. With `replaces` the named record is corrected: it ends and the new one is created
        (201, `"status": "corrected"`). Otherwise 201, `"status": "created"`. `due_at` is only for
        commitments. A key whose policy may not write the index gets a 403 (audited as
        `memory.write_denied`).
        """
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        caller = self.caller
        index = index_get_available(caller=caller, index_id=data["index_id"], param="index_id")
        result = record_write(caller=caller, index=index, draft=record_draft(data))
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
    """`GET`, `PATCH` and `DELETE` `/v1/memory/{id}`."""

    required_capabilities = MEMORY_CAPABILITIES

    class InputSerializer(StrictSerializer):
        text = serializers.CharField(max_length=20_000, required=False)
        metadata = serializers.DictField(required=False)
        confidence = serializers.FloatField(min_value=0.0, max_value=1.0, required=False)
        due_at = OffsetDateTimeField(required=False, allow_null=True)
        done = serializers.BooleanField(required=False)
        expires_at = OffsetDateTimeField(required=False, allow_null=True, help_text="When it stops being true; null: never; a past time ends its truth now.")

    OutputSerializer = RecordOutputSerializer

    class FilterSerializer(StrictSerializer):
        json_types = False  # query parameters are text
        as_of = AsOfField()

    @extend_schema(parameters=[FilterSerializer])
    def get(self, request, record_id: str):
        """Read a record

        One record with its effective confidence (after decay under this key's half-lives). A
        request with a person sees only hers and shared ones. With `as_of` the record as it stood
        then, from its history (also one ended or deleted since; 404 when it did not exist then or
        was deleted), with today's rights and its effective confidence then. An expired record is
        shown when asked for by id, with its `expires_at`.
        """
        options = self.FilterSerializer(data=request.query_params)
        options.is_valid(raise_exception=True)
        at = options.validated_data.get("as_of")
        if at is not None:
            return Response(self.OutputSerializer(record_as_of(caller=self.caller, record_id=record_id, at=at)).data)
        record = record_get_available(caller=self.caller, record_id=record_id, right="read")
        return Response(self.OutputSerializer(record).data)

    @extend_schema(
        responses={
            200: RecordOutputSerializer,
            204: OpenApiResponse(description="Changed; the key may write the record's index but not read it, so it is not shown."),
        }
    )
    def patch(self, request, record_id: str):
        """Change a record

        Sets `text`, `metadata`, `confidence`, `due_at` or `done` (the last two for commitments) of an
        active record; any change restarts its decay age and keeps a version in its history. Needs
        the write right; a request with a person changes only her own records. The answer is the
        changed record, or 204 without a body for a key that may not read the index.
        """
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        caller = self.caller
        updated = record_update(caller=caller, record_id=record_id, changes=serializer.validated_data)
        if not caller.may_read(updated.index_id):
            # Writing is not reading: a key that may only write is not shown the record.
            return Response(status=status.HTTP_204_NO_CONTENT)
        changed = record_get_available(caller=replace(caller, subject=None), record_id=record_id, right="read")
        return Response(self.OutputSerializer(changed).data)

    def delete(self, request, record_id: str):
        """Delete a record

        The record is gone from every read (its versions stay in the history for auditors). A
        request with a person deletes only her own records; another's or a shared one is a 404.
        Deleting a correction does not bring back the record it ended.
        """
        record_delete(caller=self.caller, record_id=record_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class HistoryPagination(IdCursorPagination):
    ordering = ("-history_id",)
    integer_position = True


class MemoryHistoryApi(CoreApi):
    """`GET /v1/memory/{id}/history`: every version, newest first."""

    required_capabilities = MEMORY_CAPABILITIES
    pagination_class = HistoryPagination

    class OutputSerializer(RecordFieldsSerializer):
        """A version: the record's stored fields then, and what changed it, when, by whom."""

        history_id = serializers.IntegerField()
        history_date = serializers.DateTimeField()
        change = serializers.SerializerMethodField()
        actor = serializers.SerializerMethodField()
        changed_at = serializers.DateTimeField()

        def get_change(self, version) -> str:
            return change_reason_parts(version.history_change_reason)[0]

        def get_actor(self, version) -> str | None:
            return change_reason_parts(version.history_change_reason)[1]

    def get(self, request, record_id: str):
        """Read a record's history

        Every version of the record, newest first: its stored fields then, what changed it
        (`created`, `confirmed`, `corrected`, `updated`, `ended`, `deleted`), when and by whom.
        """
        record = record_get_available(caller=self.caller, record_id=record_id, right="read")
        return paginated_response(
            queryset=record_history(record=record),
            request=request,
            view=self,
            serializer_class=self.OutputSerializer,
            pagination_class=HistoryPagination,
        )


class MemorySearchApi(CoreApi):
    """`POST /v1/memory/search`: needs the read right only."""

    required_capabilities = MEMORY_CAPABILITIES

    class InputSerializer(StrictSerializer):
        index_id = serializers.CharField(max_length=40)
        query = serializers.CharField(max_length=2000)
        types = serializers.ListField(child=serializers.CharField(max_length=40), required=False, default=None)
        after = OffsetDateTimeField(required=False, default=None)
        before = OffsetDateTimeField(required=False, default=None)
        limit = serializers.IntegerField(min_value=1, max_value=SEARCH_MAX_LIMIT, default=SEARCH_DEFAULT_LIMIT)
        as_of = AsOfField(default=None)

    class OutputSerializer(RecordOutputSerializer):
        score = serializers.FloatField()

    @extend_schema(
        responses={
            200: inline_serializer(
                name="MemorySearchAnswer",
                fields={
                    "data": OutputSerializer(many=True),
                    "trace": serializers.JSONField(
                        help_text=(
                            "What the search did with the index's models: `embedding_model` whose vectors it compared "
                            "(null: none), `vectors` (`used`, `none`, or `full_text_only` with `vectors_error` when the "
                            "model failed and the search ran on full text alone), and, when the index names a rerank "
                            "model, `rerank`: `model`, `ran`, `candidates`, `milliseconds` and the `error` that left the "
                            "fused order standing."
                        )
                    ),
                },
            ),
            **error_responses(404, e404=INDEX_NOT_FOUND),
        }
    )
    def post(self, request):
        """Search records

        The records of an index most relevant to a natural-language `query`, best first, each with
        its `score` (0..1): a record that matches some of the query's words is a candidate. Scoped
        like the list (a person sees hers and the shared ones). Each hit's `retrieval_count` rises by
        one. Expired records are never found. With `as_of` the records as they stood then (from
        their history, also those ended or deleted since), with today's rights, ranked by full text
        and their effective confidence then; nothing is counted. Needs only the read right.
        """
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        caller = self.caller
        index = index_get_available(caller=caller, index_id=data["index_id"], param="index_id", right="read")
        filters = SearchFilters(
            types=data["types"], after=data["after"], before=data["before"], limit=data["limit"], all_subjects=caller.subject is None
        )
        trace = SearchTrace()
        if data["as_of"] is not None:
            hits = record_search_as_of(caller=caller, index=index, query=data["query"], filters=filters, at=data["as_of"])
        else:
            hits = records_search_retrieve(caller=caller, index=index, query=data["query"], filters=filters, trace=trace)
        answers = [{**record_answer(record), "score": round(score, EFFECTIVE_CONFIDENCE_DIGITS)} for record, score in hits]
        return Response({"data": answers, "trace": trace.as_dict()})


class JsonLinesParser(BaseParser):
    """A body of JSON Lines (one JSON object per line), handed on as its lines of text."""

    media_type = "application/x-ndjson"

    def parse(self, stream, media_type=None, parser_context=None) -> list[str]:
        try:
            return json_lines_split(stream.read().decode("utf-8")) if stream is not None else []
        except UnicodeDecodeError:
            raise InvalidRequest("The body is not UTF-8 text.") from None


class JsonlParser(JsonLinesParser):
    media_type = "application/jsonl"


MAX_IMPORT_LINES = 10_000


class ImportLineErrorSerializer(serializers.Serializer):
    line = serializers.IntegerField(help_text="The line's number, counting from 1 as editors do.")
    param = serializers.CharField(allow_null=True, help_text="The field of that line, or null for the whole line.")
    message = serializers.CharField()


class ImportReportSerializer(serializers.Serializer):
    dry_run = serializers.BooleanField()
    lines = serializers.IntegerField(help_text="Lines read (blank lines aside).")
    created = serializers.IntegerField()
    confirmed = serializers.IntegerField(help_text="Lines whose text she (or the shared set) already had: that record is confirmed.")
    skipped = serializers.IntegerField(help_text="Lines of deleted records (or Zep facts with `invalid_at`), not written.")
    already_imported = serializers.IntegerField(
        help_text="Lines this organisation imported before (or, for Core's export, holds already): nothing is written twice."
    )
    errors = ImportLineErrorSerializer(many=True)


class ImportFailureSerializer(serializers.Serializer):
    class Detail(serializers.Serializer):
        type = serializers.CharField()
        message = serializers.CharField()
        param = serializers.CharField(allow_null=True, help_text="The first failing line and field, e.g. `lines[3].type`.")
        lines = ImportLineErrorSerializer(
            many=True, required=False, help_text=f"Every failing line (the first {MAX_REPORTED_ERRORS}); absent when the request itself is wrong."
        )

    error = Detail()


class MemoryImportApi(CoreApi):
    """`POST /v1/memory/import`: JSON Lines of records into one index, all or nothing."""

    required_capabilities = MEMORY_CAPABILITIES
    parser_classes = [JsonLinesParser, JsonlParser]

    class FilterSerializer(StrictSerializer):
        json_types = False  # query parameters are text
        index_id = serializers.CharField(max_length=40, help_text="The index every line goes into.")
        # Not `format`: DRF reads that query parameter as a renderer's name.
        origin = serializers.ChoiceField(choices=FORMATS, default="core", help_text="What wrote the lines: `core` (Core's export), `mem0` or `zep`.")
        dry_run = serializers.BooleanField(default=False, help_text="Check every line and answer the report; write nothing.")

    @extend_schema(
        parameters=[FilterSerializer],
        request={"application/x-ndjson": {"type": "string", "pattern": r"\S", "description": "One JSON object per line."}},
        responses={
            200: ImportReportSerializer,
            400: OpenApiResponse(ImportFailureSerializer, description=(
                "A line cannot be imported (nothing was): `param` names the first failing line and field, "
                "`lines` every failing line; or a query parameter is wrong."
            )),
            **error_responses(404, e404=INDEX_NOT_FOUND),
        },
    )
    def post(self, request):
        """Import records

        Reads JSON Lines of records into one index, as one transaction: either every line is
        written or — when any line fails — none is, and the answer names each failing line and
        field. `origin=core` (the default) reads Core's own export lines (`manage.py export_memory`,
        or a person's export document) and keeps each record whole: times, confirmations, status,
        structured fields, provenance; episodes and lessons need a key with `management`.
        `origin=mem0` reads mem0 memories (`memory`, `user_id`, `metadata`, `categories`,
        `created_at`; also `get_all`'s `{"results": [...]}`) and `origin=zep` Zep facts (`fact`,
        `user_id`, `uuid`, `valid_at`, `invalid_at`, `created_at`), both as `fact` records with
        their own time. Each line is a write as by `POST /v1/memory`: a text she already has is
        confirmed; a record imported before is not written again. A request with a person imports only her records. At most 10,000 lines; send
        `Content-Type: application/x-ndjson`. With `dry_run=true` the same report, nothing written.
        Audited as `memory.imported`.
        """
        options = self.FilterSerializer(data=request.query_params)
        options.is_valid(raise_exception=True)
        options = options.validated_data
        lines = request.data if isinstance(request.data, list) else []
        if not any(line.strip() for line in lines):
            raise InvalidRequest("Send one JSON object per line (Content-Type: application/x-ndjson).", param="body")
        if len(lines) > MAX_IMPORT_LINES:
            raise InvalidRequest(f"At most {MAX_IMPORT_LINES} lines per request; `manage.py import_memory` takes more.", param="body")
        index = index_get_available(caller=self.caller, index_id=options["index_id"], param="index_id", right="write")
        try:
            report = records_import(
                caller=self.caller,
                lines=lines,
                format=options["origin"],
                index=index,
                dry_run=options["dry_run"],
            )
        except ImportFailed as failure:
            body = error_body(status_code=400, message=failure.message, param=failure.param)
            body["error"]["lines"] = failure.report.errors
            return Response(body, status=400)
        return Response(ImportReportSerializer(report).data)
