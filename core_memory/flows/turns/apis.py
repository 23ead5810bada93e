import json
from collections import deque

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.response import Response

from core_memory.base.api.pagination import ListQuerySerializer, query_parameters_read, sequence_paginated_response
from core_memory.base.api.schema import error_responses, list_envelope
from core_memory.base.api.views import CoreApi
from core_memory.base.validation import StrictSerializer, TimeZoneField
from core_memory.flows.turns.services import MAX_TURN_MESSAGES, turn_plan, turn_run
from core_memory.threads.apis import ItemOutputSerializer
from core_memory.threads.models import Item
from core_memory.threads.selectors import response_get_available, response_output_as_caller_reads
from core_memory.threads.services import ItemDraft
from memory.tools.catalogue import memory_tools_list

# What a request may call a message's role, and the role the thread stores. Never `system` (or
# `developer`): the input is stored on the thread, and a stored system message would instruct
# every later turn on it, by any key — as the items import refuses it. A turn's own
# instructions go in `instructions`.
INPUT_ROLES = {"user": Item.Role.USER, "assistant": Item.Role.ASSISTANT}
SYSTEM_ROLE_REFUSED = "A message's role is user or assistant; give a turn's instructions in `instructions`."
TEXT_PART_TYPES = ("input_text", "output_text", "text")
TEXT_OR_LIST_SCHEMA = {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "object"}}]}
INPUT_MESSAGE_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["role", "content"],
    "properties": {
        "type": {"type": "string", "enum": ["message"]},
        "role": {"type": "string", "enum": sorted(INPUT_ROLES)},
        "content": {
            "oneOf": [
                {"type": "string"},
                {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["type", "text"],
                        "properties": {"type": {"type": "string", "enum": list(TEXT_PART_TYPES)}, "text": {"type": "string"}},
                    },
                },
            ]
        },
    },
}
INPUT_SCHEMA = {
    "oneOf": [{"type": "string", "pattern": r"\S"}, {"type": "array", "minItems": 1, "maxItems": MAX_TURN_MESSAGES, "items": INPUT_MESSAGE_SCHEMA}]
}


@extend_schema_field(TEXT_OR_LIST_SCHEMA)
class MessageContentField(serializers.Field):
    """A string, or a list of text parts `{"type": "input_text", "text": "…"}` joined by newlines."""

    def to_internal_value(self, data):
        if isinstance(data, str):
            return data
        if isinstance(data, list) and all(
            isinstance(part, dict) and part.get("type") in TEXT_PART_TYPES and isinstance(part.get("text"), str) for part in data
        ):
            return "\n".join(part["text"] for part in data)
        raise serializers.ValidationError("content is a string or a list of text parts.")


class InputMessageSerializer(StrictSerializer):
    type = serializers.ChoiceField(choices=["message"], required=False)
    role = serializers.ChoiceField(choices=sorted(INPUT_ROLES), error_messages={"invalid_choice": SYSTEM_ROLE_REFUSED})
    content = MessageContentField()


@extend_schema_field(INPUT_SCHEMA)
class TurnInputField(serializers.Field):
    """`input`: a string (one user message) or a non-empty list of at most MAX_TURN_MESSAGES messages."""

    def to_internal_value(self, data):
        if isinstance(data, str) and data.strip():
            return [ItemDraft(role=Item.Role.USER, content=data)]
        if isinstance(data, list) and len(data) > MAX_TURN_MESSAGES:
            raise serializers.ValidationError(f"At most {MAX_TURN_MESSAGES} messages in one request; this has {len(data)}.")
        if isinstance(data, list) and data:
            messages = InputMessageSerializer(data=data, many=True)
            messages.is_valid(raise_exception=True)
            return [ItemDraft(role=INPUT_ROLES[message["role"]], content=message["content"]) for message in messages.validated_data]
        raise serializers.ValidationError("input is a non-empty string or a non-empty list of messages.")


class ToolRequestSerializer(StrictSerializer):
    type = serializers.ChoiceField(choices=["tool"])
    name = serializers.CharField(max_length=200)


class ResponseOutputSerializer(serializers.Serializer):
    id = serializers.CharField()
    object = serializers.SerializerMethodField()
    thread_id = serializers.CharField()
    status = serializers.CharField()
    model = serializers.CharField()
    agent_id = serializers.SerializerMethodField()
    agent_version = serializers.SerializerMethodField()
    output = serializers.SerializerMethodField()
    usage = serializers.JSONField()
    trace = serializers.JSONField()
    error = serializers.JSONField()
    created_at = serializers.DateTimeField()
    completed_at = serializers.DateTimeField(allow_null=True)

    def get_object(self, response) -> str:
        return "response"

    def get_agent_id(self, response) -> str | None:
        return response.agent_version.agent_id if response.agent_version_id else None

    def get_agent_version(self, response) -> int | None:
        return response.agent_version.version if response.agent_version_id else None

    def get_output(self, response) -> list[dict]:
        return ItemOutputSerializer(self.context.get("output", []), many=True).data


EVENT_STREAM_SCHEMA = OpenApiTypes.STR


def _sse(event: str, data: dict) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False, separators=(',', ':'))}\n\n".encode()


class _EventStream:
    """Server-Sent Events: `response.created`, one `response.output_item.done` per item, then
    `response.completed`, whose data is the turn's JSON answer (kept in `answer` for an idempotent replay)."""

    def __init__(self, events):
        self.events = events
        self.answer: dict | None = None

    def __iter__(self):
        try:
            for event in self.events:
                if event.kind == "created":
                    yield _sse("response.created", ResponseOutputSerializer(event.response, context={"output": []}).data)
                elif event.kind == "item":
                    yield _sse("response.output_item.done", ItemOutputSerializer(event.item).data)
                else:
                    self.answer = ResponseOutputSerializer(event.response, context={"output": event.output}).data
                    yield _sse("response.completed", self.answer)
        finally:
            # A reader who leaves closes the turn now, not whenever the collector gets to it.
            self.events.close()


class ResponseCreateApi(CoreApi):
    """`POST /v1/responses`: one turn, answered as JSON or, with `stream`, as Server-Sent Events."""

    class InputSerializer(StrictSerializer):
        model = serializers.CharField(required=False, default=None, max_length=200)
        input = TurnInputField()
        tools = serializers.ListField(child=ToolRequestSerializer(), required=False, default=list, max_length=64)
        user = serializers.CharField(required=False, default=None, max_length=255)
        agent = serializers.CharField(required=False, default=None, max_length=200)
        thread_id = serializers.CharField(required=False, default=None, max_length=40)
        timezone = TimeZoneField(required=False, default=None, max_length=64)
        instructions = serializers.CharField(required=False, default=None, allow_blank=True, max_length=100_000)
        stream = serializers.BooleanField(default=False)

    OutputSerializer = ResponseOutputSerializer

    @extend_schema(
        responses={
            (200, "application/json"): ResponseOutputSerializer,
            (200, "text/event-stream"): EVENT_STREAM_SCHEMA,
            **error_responses(404, e404="No such thread or agent for this key."),
        }
    )
    def post(self, request):
        """Run a turn

        Builds the memory block for the turn's person (the agent's `memory_injection` or the key's),
        calls the model, runs its memory tool calls, stores the items on the thread (a new one unless
        `thread_id` names one) and answers the turn with its output items, usage and
        `trace.memory`. The person is a subject token's, else `X-Core-Subject`, else `user`.
        `tools` names memory tools (`memory__<index-id>__search`/`__write`) the key may offer (400 on
        `tools[i]` otherwise). A failed or incomplete model run is still a 200, with `status` and
        `error`. With `"stream": true` the answer is Server-Sent Events: `response.created`, one
        `response.output_item.done` per item, then `response.completed` carrying this same JSON.
        """
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        plan = turn_plan(
            caller=self.request_caller(body_user=data["user"]),
            model_id=data["model"],
            input=data["input"],
            tool_names=[tool["name"] for tool in data["tools"]],
            agent_ref=data["agent"],
            thread_id=data["thread_id"],
            timezone_name=data["timezone"],
            instructions=data["instructions"],
        )
        if plan.subject is not None:
            self.idempotency_persons.add(plan.subject)  # a turn on her thread names her nowhere else
        events = turn_run(plan=plan)
        if data["stream"]:
            stream = _EventStream(events)
            response = StreamingHttpResponse(iter(stream), content_type="text/event-stream")
            response["Cache-Control"] = "no-cache"
            response["X-Accel-Buffering"] = "no"
            response.idempotency_final_answer = lambda: stream.answer
            return response
        last = deque(events, maxlen=1)[0]
        return Response(self.OutputSerializer(last.response, context={"output": last.output}).data)


class ResponseDetailApi(CoreApi):
    """`GET /v1/responses/{id}`: a turn as it ended, with its trace, however it was asked for
    (here, by an agent, or on the OpenAI-compatible surface)."""

    OutputSerializer = ResponseOutputSerializer

    @extend_schema(responses={200: ResponseOutputSerializer, **error_responses(404, e404="No such response for this key.")})
    def get(self, request, response_id: str):
        """Read a turn

        The turn's answer as `POST /v1/responses` gave it: its output items, usage, status, error and
        `trace.memory`. A key without `threads` reads only the turns it made itself; a request for one
        person (a subject token, `X-Core-Subject`) reads only her turns.
        """
        caller = self.caller
        response = response_get_available(caller=caller, response_id=response_id, param="response_id")
        return Response(self.OutputSerializer(response, context={"output": response_output_as_caller_reads(caller=caller, response=response)}).data)


class ToolListApi(CoreApi):
    """`GET /v1/tools?source=memory`: both memory tools of every index the key's policy names."""

    required_capabilities = ("memory",)

    class ToolSerializer(serializers.Serializer):
        name = serializers.CharField(help_text="`memory__<index-id>__search` or `memory__<index-id>__write`.")
        description = serializers.CharField()
        parameters = serializers.JSONField(help_text="The tool's arguments as JSON Schema.")
        offered = serializers.BooleanField(help_text="Whether this key's memory configuration and policy let a turn offer it.")

    class FilterSerializer(ListQuerySerializer):
        source = serializers.ChoiceField(choices=["memory"], default="memory", help_text="Only `memory` exists.")

    @extend_schema(responses={200: list_envelope("ToolList", ToolSerializer)})
    def get(self, request):
        """List the memory tools

        Both tools of every index the key's policy names, each with its name, description and
        JSON-Schema parameters, and whether it is `offered` in a turn (the key's `retrieval_tool` /
        `write_tool` switch and the policy's read / write right). The write tool's description says
        today's date in the organisation's time zone.
        """
        query_parameters_read(request.query_params, self.FilterSerializer)
        # The key's own caller: which tools it has does not depend on the request's person.
        caller = self.principal
        return sequence_paginated_response(items=memory_tools_list(caller=caller), request=request)
