"""The batch routes: many writes, or deletions, of records in one request (memory.services.batches)."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from core_memory.base.api.exceptions import error_body
from core_memory.base.api.schema import error_responses
from core_memory.base.api.views import CoreApi
from core_memory.base.errors import ApplicationError, InvalidRequest
from core_memory.base.validation import StrictSerializer, first_error
from memory.answers import WRITE_STATUS_CODES, RecordInputSerializer, record_draft, record_write_answer
from memory.services.batches import BatchFailure, records_delete_batch, records_write_batch
from memory.services.writes import RecordDraft
from stores.selectors import index_get_available

# `memory` needs `knowledge`: a key is checked for both.
MEMORY_CAPABILITIES = ("knowledge", "memory")
INDEX_NOT_FOUND = "No such index for this key (also: another organisation's, deleted, or not in the key's policy)."


MAX_BATCH_RECORDS = 1000
# What an item of a batch is answered with: a single write's status, or its error.
BATCH_WRITE_STATUSES = ("created", "confirmed", "corrected", "error")
BATCH_DELETE_STATUSES = ("deleted", "error")


class BatchItemErrorSerializer(serializers.Serializer):
    type = serializers.CharField()
    message = serializers.CharField()
    param = serializers.CharField(allow_null=True, help_text="The item's field, e.g. `records[3].type`.")


class BatchWriteResultSerializer(serializers.Serializer):
    """An item's answer: the write answer with its status code, or its error."""

    status = serializers.ChoiceField(choices=BATCH_WRITE_STATUSES)
    status_code = serializers.IntegerField(help_text="What `POST /v1/memory` would have answered for this item alone.")
    memory_id = serializers.CharField(required=False)
    type = serializers.CharField(required=False)
    text = serializers.CharField(required=False)
    confidence = serializers.FloatField(required=False)
    subject = serializers.CharField(required=False, allow_null=True)
    index_id = serializers.CharField(required=False)
    created_at = serializers.DateTimeField(required=False)
    error = BatchItemErrorSerializer(required=False)


def batch_failure_answer(failure: BatchFailure, *, position: int) -> dict:
    """An item's error as a single request would have answered it, its field named within the batch."""
    error = failure.error
    param = f"records[{position}]" + (f".{error.param}" if error.param else "")
    body = error_body(status_code=error.status_code, message=error.message, param=param, error_type=error.error_type)
    return {"status": "error", "status_code": error.status_code, **body}


def batch_drafts(records: list) -> list[RecordDraft | ApplicationError]:
    """Each item checked as `POST /v1/memory` checks its body: its draft, or its 400 naming the field."""
    drafts: list[RecordDraft | ApplicationError] = []
    for item in records:
        serializer = RecordInputSerializer(data=item)
        if serializer.is_valid():
            drafts.append(record_draft(serializer.validated_data))
        else:
            param, message = first_error(serializer.errors)
            drafts.append(InvalidRequest(message, param=param))
    return drafts


class MemoryBatchApi(CoreApi):
    """`POST /v1/memory/batch`: many writes in one request."""

    required_capabilities = MEMORY_CAPABILITIES

    class InputSerializer(StrictSerializer):
        index_id = serializers.CharField(max_length=40)
        records = serializers.ListField(
            child=serializers.JSONField(), min_length=1, max_length=MAX_BATCH_RECORDS,
            help_text=f"1 to {MAX_BATCH_RECORDS} records, each the body of `POST /v1/memory` without `index_id`.",
        )

    # The body as the document shows it, each record in full; the input reads each record apart, to answer it alone.
    class RequestSerializer(InputSerializer):
        records = serializers.ListField(
            child=RecordInputSerializer(), min_length=1, max_length=MAX_BATCH_RECORDS,
            help_text=f"1 to {MAX_BATCH_RECORDS} records, each the body of `POST /v1/memory` without `index_id`.",
        )

    @extend_schema(
        request=RequestSerializer,
        responses={
            200: inline_serializer("MemoryBatchAnswer", {"results": BatchWriteResultSerializer(many=True)}),
            **error_responses(404, e404=INDEX_NOT_FOUND),
        },
    )
    def post(self, request):
        """Write records in a batch

        Up to 1000 records into one index in one request, each written exactly as `POST /v1/memory`
        writes it — created, confirmed (the same text as an active record), or corrected
        (`replaces`) — for the request's person, in one transaction. `results` answers every item
        in order: its write answer with `status` and the `status_code` a single write would have
        had, or `"status": "error"` with that error's status code and body, its `param` naming
        the item and field (`records[3].type`). A failing item writes nothing; the others are
        written. A key whose policy may not write the index gets a 403 for the whole batch
        (audited as `memory.write_denied`). One `Idempotency-Key` covers the whole batch.
        """
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        caller = self.caller
        index = index_get_available(caller=caller, index_id=data["index_id"], param="index_id")
        written = records_write_batch(caller=caller, index=index, drafts=batch_drafts(data["records"]))
        results = [
            batch_failure_answer(result, position=position) if isinstance(result, BatchFailure)
            else {**record_write_answer(result), "status_code": WRITE_STATUS_CODES[result.status]}
            for position, result in enumerate(written)
        ]
        return Response({"results": results})


class MemoryBatchDeleteApi(CoreApi):
    """`POST /v1/memory/batch/delete`: many deletions in one request."""

    required_capabilities = MEMORY_CAPABILITIES

    class InputSerializer(StrictSerializer):
        ids = serializers.ListField(
            child=serializers.RegexField(r"^mem_[0-9a-z]+$", max_length=40), min_length=1, max_length=MAX_BATCH_RECORDS,
            help_text=f"1 to {MAX_BATCH_RECORDS} record ids.",
        )

    class ResultSerializer(serializers.Serializer):
        id = serializers.CharField()
        status = serializers.ChoiceField(choices=BATCH_DELETE_STATUSES)
        status_code = serializers.IntegerField(help_text="What `DELETE /v1/memory/{id}` would have answered for this id alone.")
        error = BatchItemErrorSerializer(required=False)

    @extend_schema(responses={200: inline_serializer("MemoryBatchDeleteAnswer", {"results": ResultSerializer(many=True)})})
    def post(self, request):
        """Delete records in a batch

        Deletes up to 1000 records in one request, each as `DELETE /v1/memory/{id}` deletes it, in
        one transaction. `results` answers every id in order: `"status": "deleted"` (204), or
        `"status": "error"` with the error a single delete would have had (404 for a record the
        request may not address, 403 where the policy may not write its index), `param` naming
        the item (`ids[2]`).
        """
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        record_ids = serializer.validated_data["ids"]
        outcomes = records_delete_batch(caller=self.caller, record_ids=record_ids)
        results = []
        for position, (record_id, outcome) in enumerate(zip(record_ids, outcomes)):
            if isinstance(outcome, BatchFailure):
                error = outcome.error
                body = error_body(status_code=error.status_code, message=error.message, param=f"ids[{position}]", error_type=error.error_type)
                results.append({"id": record_id, "status": "error", "status_code": error.status_code, **body})
            else:
                results.append({"id": record_id, "status": "deleted", "status_code": 204})
        return Response({"results": results})
