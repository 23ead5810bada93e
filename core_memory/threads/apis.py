from django.utils import timezone
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.response import Response

from core_memory.base.api.pagination import IdCursorPagination, paginated_response
from core_memory.base.api.schema import NOT_BLANK_PATTERN, list_envelope
from core_memory.base.api.views import CoreApi
from core_memory.base.errors import Unprocessable
from core_memory.base.storable import metadata_check, storable_check
from core_memory.base.validation import OffsetDateTimeField, StrictSerializer
from core_memory.threads.models import Item
from core_memory.threads.selectors import items_as_caller_reads, thread_get_available, thread_items
from core_memory.threads.services import ItemDraft, thread_create, thread_items_append

MAX_IMPORTED_ITEMS = 100
# Earlier times are stored by PostgreSQL but cannot be read back into Python (year 0).

# Which roles each kind of item may have (user, assistant, tool); tool entries carry a call id.
KIND_ROLES = {
    # Never `system`: a stored system message would instruct every later turn on the thread.
    Item.Kind.MESSAGE: {Item.Role.USER, Item.Role.ASSISTANT},
    Item.Kind.TOOL_CALL: {Item.Role.ASSISTANT},
    Item.Kind.TOOL_RESULT: {Item.Role.TOOL},
    Item.Kind.REASONING: {Item.Role.ASSISTANT},
}


class ThreadOutputSerializer(serializers.Serializer):
    id = serializers.CharField()
    subject = serializers.CharField(allow_null=True)
    metadata = serializers.JSONField()
    key_id = serializers.CharField()
    agent_ids = serializers.SerializerMethodField()
    item_count = serializers.IntegerField()
    last_item_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()

    def get_agent_ids(self, thread) -> list[str]:
        return sorted(agent.id for agent in thread.agents.all())


class ItemOutputSerializer(serializers.Serializer):
    id = serializers.CharField()
    thread_id = serializers.CharField()
    role = serializers.CharField()
    kind = serializers.CharField()
    content = serializers.JSONField()
    name = serializers.SerializerMethodField()
    call_id = serializers.SerializerMethodField()
    sealed = serializers.BooleanField()
    response_id = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()
    withheld = serializers.SerializerMethodField(
        help_text="A memory tool's call or result whose index this key may not read now: its content and name are left out."
    )

    def get_withheld(self, item) -> bool:
        return getattr(item, "withheld", False)

    def get_name(self, item) -> str | None:
        return item.name or None

    def get_call_id(self, item) -> str | None:
        return item.call_id or None


def _item_variant(kind: str, roles: list[str], required: list[str], **properties) -> dict:
    common = {
        "kind": {"type": "string", "enum": [kind]},
        "role": {"type": "string", "enum": roles},
        "content": {"nullable": True},
        "name": {"type": "string", "maxLength": 200},
        "call_id": {"type": "string", "maxLength": 200},
        "sealed": {"type": "boolean"},
        "created_at": {"type": "string", "format": "date-time", "description": "Not in the future (422)."},
    }
    return {"type": "object", "additionalProperties": False, "required": required, "properties": {**common, **properties}}


# A call id or a tool's name is trimmed as it is read: it needs a character that is not whitespace.
NOT_BLANK_TEXT = {"type": "string", "minLength": 1, "maxLength": 200, "pattern": NOT_BLANK_PATTERN}

# The document states the kind/role rules of `validate`, one variant per kind (a message by default).
ITEM_SCHEMA = {
    "oneOf": [
        _item_variant(
            "message",
            ["user", "assistant"],
            ["role", "content"],
            content={"anyOf": [{"type": "string", "minLength": 1}, {"type": "object"}, {"type": "array"}, {"type": "number"}, {"type": "boolean"}]},
        ),
        _item_variant("tool_call", ["assistant"], ["kind", "role", "call_id", "name"], call_id=NOT_BLANK_TEXT, name=NOT_BLANK_TEXT),
        _item_variant("tool_result", ["tool"], ["kind", "role", "call_id"], call_id=NOT_BLANK_TEXT),
        _item_variant("reasoning", ["assistant"], ["kind", "role"]),
    ]
}


class ItemInputSerializer(StrictSerializer):
    role = serializers.ChoiceField(choices=Item.Role.choices)
    kind = serializers.ChoiceField(choices=Item.Kind.choices, default=Item.Kind.MESSAGE)
    content = serializers.JSONField(allow_null=True, required=False, default=None)
    name = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    call_id = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    sealed = serializers.BooleanField(default=False)
    created_at = OffsetDateTimeField(required=False, default=None)

    def validate(self, attrs):
        if attrs["role"] not in KIND_ROLES[attrs["kind"]]:
            allowed = ", ".join(sorted(KIND_ROLES[attrs["kind"]]))
            raise serializers.ValidationError({"role": [f"A {attrs['kind']} item has the role {allowed}."]})
        if attrs["kind"] in (Item.Kind.TOOL_CALL, Item.Kind.TOOL_RESULT) and not attrs["call_id"]:
            raise serializers.ValidationError({"call_id": ["A tool call or tool result names its call_id."]})
        if attrs["kind"] == Item.Kind.TOOL_CALL and not attrs["name"]:
            raise serializers.ValidationError({"name": ["A tool call names its tool."]})
        if attrs["kind"] == Item.Kind.MESSAGE and attrs["content"] in (None, ""):
            raise serializers.ValidationError({"content": ["A message has content."]})
        return attrs


@extend_schema_field({"type": "array", "minItems": 1, "maxItems": MAX_IMPORTED_ITEMS, "items": ITEM_SCHEMA})
class ItemsField(serializers.ListField):
    """The items to import, in order."""


class ItemPositionPagination(IdCursorPagination):
    """A conversation reads oldest first, in the order its items were added."""

    ordering = "position"
    integer_position = True


class ThreadCreateApi(CoreApi):
    """`POST /v1/threads`."""

    required_capabilities = ("threads",)
    OutputSerializer = ThreadOutputSerializer

    class InputSerializer(StrictSerializer):
        subject = serializers.CharField(required=False, allow_null=True, default=None)
        metadata = serializers.DictField(required=False, default=dict)

    @extend_schema(responses={201: ThreadOutputSerializer})
    def post(self, request):
        """Start a thread

        A conversation of this key, for a person (`subject`, `X-Core-Subject` or a subject token) or
        for nobody. Turns (`POST /v1/responses` with `thread_id`) and imported items add to it.
        """
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        caller = self.request_caller(body_user=serializer.validated_data["subject"], body_param="subject")
        metadata_check(serializer.validated_data["metadata"], param="metadata")
        thread = thread_create(caller=caller, metadata=serializer.validated_data["metadata"])
        return Response(ThreadOutputSerializer(thread).data, status=status.HTTP_201_CREATED)


class ThreadDetailApi(CoreApi):
    """`GET /v1/threads/{id}`."""

    required_capabilities = ("threads",)
    OutputSerializer = ThreadOutputSerializer

    def get(self, request, thread_id: str):
        """Read a thread

        Its person, metadata, key, the agents that answered in it and how many items it holds. A
        request with a person sees only her threads.
        """
        thread = thread_get_available(caller=self.caller, thread_id=thread_id)
        return Response(ThreadOutputSerializer(thread).data)


class ThreadItemsApi(CoreApi):
    """`GET /v1/threads/{id}/items` and `POST /v1/threads/{id}/items` (import)."""

    required_capabilities = ("threads",)
    pagination_class = ItemPositionPagination
    OutputSerializer = ItemOutputSerializer

    class InputSerializer(StrictSerializer):
        items = ItemsField(child=ItemInputSerializer(), min_length=1, max_length=MAX_IMPORTED_ITEMS)

    def get(self, request, thread_id: str):
        """List a thread's items

        The thread's messages, tool calls, tool results and reasoning, oldest first, in the order
        they were added.
        """
        thread = thread_get_available(caller=self.caller, thread_id=thread_id)
        return paginated_response(
            queryset=thread_items(thread=thread),
            request=request,
            view=self,
            serializer_class=ItemOutputSerializer,
            pagination_class=ItemPositionPagination,
            shown=lambda page: items_as_caller_reads(caller=self.caller, items=page),
        )

    @extend_schema(responses={201: list_envelope("ImportedItems", ItemOutputSerializer, cursor=False)})
    def post(self, request, thread_id: str):
        """Import items into a thread

        Appends up to 100 items (messages, tool calls and results, reasoning) written elsewhere, with
        their `created_at` when given; extraction reads them like a turn's items. `sealed` items are
        never read by extraction. Answers the stored items.
        """
        thread = thread_get_available(caller=self.caller, thread_id=thread_id)
        if thread.subject is not None:
            self.idempotency_persons.add(thread.subject)  # her items; the answer does not name her
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        now = timezone.now()
        for position, item in enumerate(serializer.validated_data["items"]):
            storable_check(item["content"], param=f"items[{position}].content")
            if item["created_at"] is not None and item["created_at"] > now:
                # Well-formed but against the rules: a 422, which the document can state but not check.
                raise Unprocessable("An imported item cannot be from the future.", param=f"items[{position}].created_at")
        items = thread_items_append(
            thread=thread, caller=self.caller, drafts=[ItemDraft(**item) for item in serializer.validated_data["items"]]
        )
        return Response({"data": ItemOutputSerializer(items, many=True).data}, status=status.HTTP_201_CREATED)
