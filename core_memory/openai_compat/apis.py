"""The OpenAI-compatible surface at `/openai/v1`: an app written against OpenAI's SDKs points its
`base_url` and key at Core and gets memory, unchanged otherwise.

Each view reads OpenAI's request into Core's turn (core_memory.flows.turns: the same injection,
memory tools, thread, trace, metering, redaction and audit as `/v1/responses`) and writes the turn
back in OpenAI's format (core_memory.openai_compat.wire). Authentication, rights, rate limits,
body limits and idempotency are Core's own (CoreApi); errors take OpenAI's shape.
"""
from __future__ import annotations

from collections import deque
from itertools import chain

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.response import Response

from core_memory.base.api.exceptions import openai_exception_handler
from core_memory.base.api.schema import ERROR_WORDS, CoreAutoSchema
from core_memory.base.api.views import CoreApi
from core_memory.base.errors import InvalidRequest, NotFound
from core_memory.base.validation import StrictSerializer
from core_memory.flows.turns.services import MAX_TURN_MESSAGES, turn_plan, turn_run
from core_memory.llm.registry import models_offered
from core_memory.openai_compat import wire
from core_memory.threads.selectors import response_get_available, response_output_as_caller_reads, thread_tool_calls

RESPONSE_ID_HEADER = "X-Core-Response-Id"
THREAD_ID_HEADER = "X-Core-Thread-Id"


class ErrorDetailSerializer(serializers.Serializer):
    message = serializers.CharField(help_text="What went wrong, in words.")
    type = serializers.CharField(help_text="invalid_request_error, authentication_error, permission_error, not_found_error, …")
    param = serializers.CharField(allow_null=True, help_text="The offending field with its path (e.g. `messages[1].content`), or null.")
    code = serializers.CharField(allow_null=True, help_text="invalid_api_key, model_not_found, invalid_value, rate_limit_exceeded, …, or null.")


class ErrorSerializer(serializers.Serializer):
    """OpenAI's error body."""

    error = ErrorDetailSerializer()


class OpenAISchema(CoreAutoSchema):
    """OpenAI's error body, and no 422: this surface answers 400 where Core answers 422."""

    error_serializer = ErrorSerializer

    def _error_codes(self) -> list[int]:
        return [code for code in super()._error_codes() if code != 422]

    # Core's own routes have views of the same names (`/v1/responses`, `/v1/models`).
    def get_operation_id(self) -> str:
        return f"openai_{super().get_operation_id()}"

    def get_serializer_name(self, serializer, direction) -> str:
        return f"OpenAI{super().get_serializer_name(serializer, direction)}"


def _errors(**words: str) -> dict:
    return {int(name[1:]): OpenApiResponse(ErrorSerializer, description=text) for name, text in words.items()}


class OpenAIApi(CoreApi):
    schema = OpenAISchema()

    def get_exception_handler(self):
        return openai_exception_handler

    def _turn_persons(self, plan) -> None:
        """A turn is about its person — the thread's, when it continues one — also when the request
        names nobody: its stored answer goes when she is erased."""
        if plan.subject is not None:
            self.idempotency_persons.add(plan.subject)

    def _turn_headers(self, response, created) -> None:
        response[RESPONSE_ID_HEADER] = created.response.id
        response[THREAD_ID_HEADER] = created.response.thread_id


def _event_stream(rendered, events) -> StreamingHttpResponse:
    def content():
        try:
            yield from rendered
        finally:
            # A reader who leaves closes the turn now (as incomplete), not whenever the collector gets to it.
            events.close()

    response = StreamingHttpResponse(content(), content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


class _ShapedJSONField(serializers.JSONField):
    """JSON whose top-level type is checked here; what is inside is read by the wire layer, which
    names the field's path in its 400."""

    types: tuple[type, ...] = ()
    message = ""

    def to_internal_value(self, data):
        if data is not None and not isinstance(data, self.types):
            raise serializers.ValidationError(self.message)
        return data


class _BoundedJSONField(_ShapedJSONField):
    """A shaped field whose list holds at most MAX_TURN_MESSAGES entries."""

    def to_internal_value(self, data):
        data = super().to_internal_value(data)
        if isinstance(data, list) and len(data) > MAX_TURN_MESSAGES:
            raise serializers.ValidationError(f"At most {MAX_TURN_MESSAGES} messages in one request; this has {len(data)}.")
        return data


@extend_schema_field({"type": "array", "minItems": 1, "maxItems": MAX_TURN_MESSAGES, "items": {"type": "object"}})
class MessagesField(_BoundedJSONField):
    """Chat messages: `{"role": "system"|"developer"|"user"|"assistant"|"tool", "content", …}`,
    at most MAX_TURN_MESSAGES."""

    types, message = (list,), "messages is a non-empty list of messages."


@extend_schema_field({"type": "array", "nullable": True, "items": {"type": "object"}})
class ToolsField(_ShapedJSONField):
    """Function tools."""

    types, message = (list,), "tools is a list of function tools."


@extend_schema_field({"oneOf": [{"type": "string"}, {"type": "object"}], "nullable": True})
class ToolChoiceField(_ShapedJSONField):
    """`auto`, `none`, `required` or one named function."""

    types, message = (str, dict), "tool_choice is auto, none, required or a named function."


@extend_schema_field({"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}, "maxItems": 4}], "nullable": True})
class StopField(serializers.JSONField):
    def to_internal_value(self, data):
        if data is None or isinstance(data, str) or (isinstance(data, list) and len(data) <= 4 and all(isinstance(each, str) for each in data)):
            return data
        raise serializers.ValidationError("stop is a string or a list of at most 4 strings.")


@extend_schema_field({"type": "object", "nullable": True})
class ObjectField(_ShapedJSONField):
    types, message = (dict,), "Give an object."


def _options(data: dict, names: tuple[str, ...]) -> dict:
    return {name: data[name] for name in names if data.get(name) is not None}


class StreamOptionsSerializer(StrictSerializer):
    include_usage = serializers.BooleanField(required=False, default=False)
    include_obfuscation = serializers.BooleanField(required=False, default=False)


class ChatCompletionCreateApi(OpenAIApi):
    """`POST /openai/v1/chat/completions`: one Core turn in Chat Completions' wire format."""

    # Sent to the model as they are.
    MODEL_OPTIONS = (
        "temperature", "top_p", "max_tokens", "max_completion_tokens", "stop", "seed", "presence_penalty",
        "frequency_penalty", "logit_bias", "parallel_tool_calls", "reasoning_effort",
    )

    class InputSerializer(StrictSerializer):
        model = serializers.CharField(max_length=200)
        messages = MessagesField()
        user = serializers.CharField(required=False, default=None, max_length=255, help_text="The person (as `X-Core-Subject`).")
        stream = serializers.BooleanField(required=False, default=False)
        stream_options = StreamOptionsSerializer(required=False, default=None, allow_null=True)
        tools = ToolsField(required=False, default=None, allow_null=True)
        tool_choice = ToolChoiceField(required=False, default=None, allow_null=True)
        parallel_tool_calls = serializers.BooleanField(required=False, default=None, allow_null=True)
        temperature = serializers.FloatField(required=False, default=None, allow_null=True, min_value=0, max_value=2)
        top_p = serializers.FloatField(required=False, default=None, allow_null=True, min_value=0, max_value=1)
        max_tokens = serializers.IntegerField(required=False, default=None, allow_null=True, min_value=1)
        max_completion_tokens = serializers.IntegerField(required=False, default=None, allow_null=True, min_value=1)
        stop = StopField(required=False, default=None, allow_null=True)
        seed = serializers.IntegerField(required=False, default=None, allow_null=True)
        presence_penalty = serializers.FloatField(required=False, default=None, allow_null=True, min_value=-2, max_value=2)
        frequency_penalty = serializers.FloatField(required=False, default=None, allow_null=True, min_value=-2, max_value=2)
        logit_bias = serializers.DictField(child=serializers.FloatField(min_value=-100, max_value=100), required=False, default=None, allow_null=True)
        response_format = ObjectField(required=False, default=None, allow_null=True)
        reasoning_effort = serializers.CharField(required=False, default=None, allow_null=True, max_length=20)
        n = serializers.IntegerField(required=False, default=1, min_value=1, max_value=1, help_text="Only 1: a turn has one answer.")
        # Taken and not used: they change nothing of the turn.
        store = serializers.BooleanField(required=False, default=None, allow_null=True)
        metadata = ObjectField(required=False, default=None, allow_null=True)
        service_tier = serializers.CharField(required=False, default=None, allow_null=True, max_length=40)
        prompt_cache_key = serializers.CharField(required=False, default=None, allow_null=True, max_length=1000)
        safety_identifier = serializers.CharField(required=False, default=None, allow_null=True, max_length=1000)

    class OutputSerializer(serializers.Serializer):
        id = serializers.CharField(help_text="Core's response id (`resp_…`), also in the `X-Core-Response-Id` header.")
        object = serializers.ChoiceField(choices=["chat.completion"])
        created = serializers.IntegerField()
        model = serializers.CharField()
        choices = serializers.ListField(child=serializers.JSONField())
        usage = serializers.JSONField()
        core = serializers.JSONField(help_text="What Core adds: `response_id`, `thread_id`, `status` and the `trace` (`trace.memory`).")

    @extend_schema(
        responses={
            (200, "application/json"): OutputSerializer,
            (200, "text/event-stream"): OpenApiTypes.STR,
            **_errors(e429=ERROR_WORDS[429] + " The organisation's monthly token limit is a 429 `insufficient_quota`.",
                      e502="The model gave no usable answer (`code` says why); the turn is kept as failed.",
                      e504="The model did not answer in time."),
        }
    )
    def post(self, request):
        """Create a chat completion (OpenAI-compatible)

        OpenAI's Chat Completions, run as a Core turn: the system messages are the turn's
        instructions (never stored on its thread), then the key's memory block for the person (`user`, `X-Core-Subject` or a
        subject token) follows, then the conversation; the memory tools the key offers run
        inside Core and are not shown as tool calls, the caller's own function `tools` come back as
        `tool_calls`. `temperature`, `max_tokens`, `response_format` and the other sampling fields
        are passed to the model. With `"stream": true` the answer is chunk events ending in
        `data: [DONE]`. Each request is a turn on a new thread holding its messages; the headers
        `X-Core-Response-Id` and `X-Core-Thread-Id` name Core's turn (`GET /v1/responses/{id}`).
        """
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        instructions, drafts = wire.chat_messages_read(data["messages"])
        options = _options(data, self.MODEL_OPTIONS)
        if data["tool_choice"] is not None:
            options["tool_choice"] = wire.chat_tool_choice(data["tool_choice"])
        if data["response_format"] is not None:
            options["response_format"] = _response_format(data["response_format"])
        plan = turn_plan(
            caller=self.request_caller(body_user=data["user"]),
            model_id=data["model"],
            input=drafts,
            tool_names=[],
            instructions=instructions,
            caller_tools=wire.chat_tools_read(data["tools"]),
            model_options=options,
            offer_memory_tools=True,
        )
        self._turn_persons(plan)
        events = turn_run(plan=plan)
        created = next(events)
        if data["stream"]:
            include_usage = bool((data["stream_options"] or {}).get("include_usage"))
            chunks = wire.ChatChunks(include_usage=include_usage)
            response = _event_stream(chunks.render(chain([created], events)), events)
        else:
            last = deque(events, maxlen=1)[0]
            if last.response.status == last.response.Status.FAILED:
                status, error = wire.failure_status(last.response)
                response = Response({"error": error}, status=status)
            else:
                response = Response(wire.chat_completion_body(last.response, last.output))
        self._turn_headers(response, created)
        return response


def _response_format(value: dict) -> dict:
    kind = value.get("type")
    if kind in ("text", "json_object"):
        return {"type": kind}
    if kind == "json_schema" and isinstance(value.get("json_schema"), dict):
        return {"type": kind, "json_schema": value["json_schema"]}
    raise InvalidRequest("response_format is {'type': 'text'|'json_object'} or {'type': 'json_schema', 'json_schema': {…}}.", param="response_format")


@extend_schema_field(
    {"oneOf": [{"type": "string", "pattern": r"\S"}, {"type": "array", "minItems": 1, "maxItems": MAX_TURN_MESSAGES, "items": {"type": "object"}}]}
)
class ResponseInputField(_BoundedJSONField):
    """A string, or messages, `function_call` and `function_call_output` items (at most MAX_TURN_MESSAGES)."""

    types, message = (str, list), "input is a non-empty string or a non-empty list."


class ResponseBodySerializer(serializers.Serializer):
    """OpenAI's `response` object (the fields Core fills)."""

    id = serializers.CharField(help_text="Core's response id (`resp_…`): `previous_response_id` of the next turn.")
    object = serializers.ChoiceField(choices=["response"])
    created_at = serializers.IntegerField()
    status = serializers.ChoiceField(choices=["in_progress", "completed", "failed", "incomplete"])
    model = serializers.CharField()
    output = serializers.ListField(child=serializers.JSONField(), help_text="`message` and `function_call` items; Core's memory tools never show.")
    error = serializers.JSONField(allow_null=True)
    usage = serializers.JSONField(allow_null=True)
    core = serializers.JSONField(help_text="What Core adds: `response_id`, `thread_id`, `status` and the `trace` (`trace.memory`).")


class ResponseCreateApi(OpenAIApi):
    """`POST /openai/v1/responses`: one Core turn in the Responses wire format."""

    class InputSerializer(StrictSerializer):
        model = serializers.CharField(max_length=200)
        input = ResponseInputField()
        instructions = serializers.CharField(required=False, default=None, allow_null=True, allow_blank=True, max_length=100_000)
        previous_response_id = serializers.CharField(required=False, default=None, allow_null=True, max_length=40)
        tools = ToolsField(required=False, default=None, allow_null=True)
        tool_choice = ToolChoiceField(required=False, default=None, allow_null=True)
        parallel_tool_calls = serializers.BooleanField(required=False, default=None, allow_null=True)
        temperature = serializers.FloatField(required=False, default=None, allow_null=True, min_value=0, max_value=2)
        top_p = serializers.FloatField(required=False, default=None, allow_null=True, min_value=0, max_value=1)
        max_output_tokens = serializers.IntegerField(required=False, default=None, allow_null=True, min_value=1)
        text = ObjectField(required=False, default=None, allow_null=True)
        reasoning = ObjectField(required=False, default=None, allow_null=True)
        stream = serializers.BooleanField(required=False, default=False)
        user = serializers.CharField(required=False, default=None, allow_null=True, max_length=255, help_text="The person (as `X-Core-Subject`).")
        metadata = serializers.DictField(child=serializers.CharField(max_length=512), required=False, default=None, allow_null=True)
        # Taken and not used: they change nothing of the turn.
        stream_options = ObjectField(required=False, default=None, allow_null=True)
        store = serializers.BooleanField(required=False, default=None, allow_null=True)
        truncation = serializers.ChoiceField(choices=["auto", "disabled"], required=False, default=None, allow_null=True)
        include = serializers.ListField(child=serializers.CharField(max_length=200), required=False, default=None, allow_null=True)
        service_tier = serializers.CharField(required=False, default=None, allow_null=True, max_length=40)
        prompt_cache_key = serializers.CharField(required=False, default=None, allow_null=True, max_length=1000)
        safety_identifier = serializers.CharField(required=False, default=None, allow_null=True, max_length=1000)

    OutputSerializer = ResponseBodySerializer

    @extend_schema(
        responses={
            (200, "application/json"): ResponseBodySerializer,
            (200, "text/event-stream"): OpenApiTypes.STR,
            **_errors(e404="No such `previous_response_id` for this key (or for this person)."),
        }
    )
    def post(self, request):
        """Create a response (OpenAI-compatible)

        OpenAI's Responses, run as a Core turn: the model reads `instructions`, then the key's memory
        block for the person (`user`, `X-Core-Subject` or a subject token), then the conversation and
        `input` (a string, or messages, `function_call` and `function_call_output` items); the memory tools the key offers
        run inside Core and never show in `output`; the caller's function `tools` come back as
        `function_call` items. `previous_response_id` continues that response's Core thread (a turn
        of this key's, or any of the organisation's with `threads`). With
        `"stream": true` the answer is the typed events (`response.created`, `response.in_progress`,
        `response.output_item.added`, `response.content_part.added`, `response.output_text.delta`,
        `response.output_text.done`, …, `response.completed`). A failed model run is still a 200,
        with `status: failed` and `error`. The headers `X-Core-Response-Id` and `X-Core-Thread-Id`
        name Core's turn.
        """
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        caller = self.request_caller(body_user=data["user"])
        thread_id, known_calls = None, {}
        if data["previous_response_id"] is not None:
            previous = response_get_available(caller=caller, response_id=data["previous_response_id"], param="previous_response_id")
            thread_id = previous.thread_id
            known_calls = thread_tool_calls(caller=caller, thread_id=thread_id)
        input_instructions, drafts = wire.responses_input_read(data["input"], known_calls=known_calls)
        options = _options(data, ("temperature", "top_p", "parallel_tool_calls"))
        if data["max_output_tokens"] is not None:
            options["max_tokens"] = data["max_output_tokens"]
        if (data["reasoning"] or {}).get("effort"):
            options["reasoning_effort"] = data["reasoning"]["effort"]
        tool_choice = wire.responses_tool_choice(data["tool_choice"])
        if tool_choice is not None:
            options["tool_choice"] = tool_choice
        response_format = wire.responses_text_format(data["text"])
        if response_format is not None:
            options["response_format"] = response_format
        plan = turn_plan(
            caller=caller,
            model_id=data["model"],
            input=drafts,
            tool_names=[],
            thread_id=thread_id,
            instructions="\n\n".join(text for text in (data["instructions"], input_instructions) if text) or None,
            caller_tools=wire.responses_tools_read(data["tools"]),
            model_options=options,
            offer_memory_tools=True,
        )
        echo = {
            name: data[name]
            for name in ("instructions", "previous_response_id", "metadata", "tool_choice", "tools", "temperature", "top_p", "max_output_tokens", "text", "user")
        }
        if data["parallel_tool_calls"] is not None:
            echo["parallel_tool_calls"] = data["parallel_tool_calls"]
        self._turn_persons(plan)
        events = turn_run(plan=plan)
        created = next(events)
        if data["stream"]:
            response = _event_stream(wire.ResponseEvents(echo=echo).render(chain([created], events)), events)
        else:
            last = deque(events, maxlen=1)[0]
            response = Response(wire.responses_body(last.response, last.output, echo=echo))
        self._turn_headers(response, created)
        return response


class ResponseDetailApi(OpenAIApi):
    """`GET /openai/v1/responses/{id}`: a turn read back as a Responses `response`."""

    OutputSerializer = ResponseBodySerializer

    @extend_schema(responses={200: ResponseBodySerializer, **_errors(e404="No such response for this key (or for this person).")})
    def get(self, request, response_id: str):
        """Retrieve a response (OpenAI-compatible)

        A turn as a Responses `response`, however it was asked for. What the request set
        (instructions, tools, sampling) is not kept, so those fields read as their defaults. A key
        without `threads` reads only the turns it made itself; a request for one person only hers.
        """
        caller = self.caller
        response = response_get_available(caller=caller, response_id=response_id, param="response_id")
        answer = Response(wire.responses_body(response, response_output_as_caller_reads(caller=caller, response=response)))
        answer[RESPONSE_ID_HEADER], answer[THREAD_ID_HEADER] = response.id, response.thread_id
        return answer


class ModelSerializer(serializers.Serializer):
    id = serializers.CharField()
    object = serializers.ChoiceField(choices=["model"])
    created = serializers.IntegerField(help_text="Always 0: Core does not know when a model was made.")
    owned_by = serializers.CharField(help_text="The model's provider protocol in `CORE_MODELS`.")


def _model(model: dict) -> dict:
    return {"id": model["id"], "object": "model", "created": 0, "owned_by": model.get("provider", "openai")}


class ModelListApi(OpenAIApi):
    """`GET /openai/v1/models`: the organisation's offered models, as OpenAI lists models."""

    class OutputSerializer(serializers.Serializer):
        object = serializers.ChoiceField(choices=["list"])
        data = ModelSerializer(many=True)

    def get(self, request):
        """List models (OpenAI-compatible)

        The chat models offered to the key's organisation (in `CORE_MODELS` and its
        `offered_models`), to name as `model`.
        """
        return Response({"object": "list", "data": [_model(model) for model in models_offered(organisation=self.organisation)]})


class ModelDetailApi(OpenAIApi):
    """`GET /openai/v1/models/{id}`."""

    OutputSerializer = ModelSerializer

    @extend_schema(responses={200: ModelSerializer, **_errors(e404="The model is not offered to this organisation.")})
    def get(self, request, model_id: str):
        """Retrieve a model (OpenAI-compatible)

        One model offered to the key's organisation; another is a 404 with code `model_not_found`.
        """
        model = next((model for model in models_offered(organisation=self.organisation) if model["id"] == model_id), None)
        if model is None:
            raise NotFound(f"The model {model_id!r} is not offered to this organisation.", param="model")
        return Response(_model(model))
