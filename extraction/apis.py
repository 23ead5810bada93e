"""`GET/PUT /v1/memory/stores/{index_id}/extraction` and
`GET/DELETE /v1/connectors/{id}`."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers, status
from rest_framework.response import Response

from core_memory.base.api.views import CoreApi
from core_memory.base.errors import NotFound
from extraction.configuration import SwitchSerializer
from extraction.models import ExtractionSwitch
from extraction.selectors import connector_get_available, switch_find, switch_status
from extraction.services.switches import connector_delete, extraction_switch_set
from stores.selectors import index_get_available


class LastRunSerializer(serializers.Serializer):
    started_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    written = serializers.IntegerField()
    confirmed = serializers.IntegerField()
    replaced = serializers.IntegerField()
    errors = serializers.IntegerField()


class WindowCountsSerializer(serializers.Serializer):
    ready = serializers.IntegerField()
    failed = serializers.IntegerField()
    queued = serializers.IntegerField()
    parked = serializers.IntegerField()


class SwitchFiltersSerializer(serializers.Serializer):
    key_ids = serializers.ListField(child=serializers.CharField(), source="filter_key_ids")
    agent_ids = serializers.ListField(child=serializers.CharField(), source="filter_agent_ids")


class SwitchOutputSerializer(serializers.Serializer):
    """A switch as `GET` shows it; its status (`state`, `last_run`, `windows`, `error_code`)
    comes in the context, read once by `switch_status`."""

    index_id = serializers.CharField()
    enabled = serializers.BooleanField()
    model = serializers.CharField(allow_blank=True)
    instructions = serializers.CharField(allow_blank=True)
    types = serializers.ListField(child=serializers.CharField())
    schedule_minutes = serializers.IntegerField()
    threads = serializers.CharField(source="threads_read")
    episodes = serializers.BooleanField()
    lessons = serializers.BooleanField()
    filters = SwitchFiltersSerializer(source="*")
    connector_id = serializers.CharField()
    key_id = serializers.CharField(source="author_key_id", help_text="The key extraction runs under: the last to send the switch.")
    state = serializers.SerializerMethodField()
    last_run = serializers.SerializerMethodField()
    windows = serializers.SerializerMethodField()
    error_code = serializers.SerializerMethodField()
    set_at = serializers.DateTimeField()

    @extend_schema_field(
        serializers.ChoiceField(
            choices=["active", "off", "author_unavailable", "model_unavailable", "objects_missing"],
            help_text="Why the switch does or does not run: off, its key revoked, expired or deleted, its model no "
            "longer offered, or its connector or index gone.",
        )
    )
    def get_state(self, switch) -> str:
        return self.context["status"].state

    # Inline: OpenAPI 3.0 validators do not follow a nullable reference to a component.
    @extend_schema_field(
        {
            "type": "object",
            "nullable": True,
            "description": "The latest run; null before the first.",
            "properties": {
                "started_at": {"type": "string", "format": "date-time"},
                "finished_at": {"type": "string", "format": "date-time", "nullable": True},
                **{count: {"type": "integer"} for count in ("written", "confirmed", "replaced", "errors")},
            },
            "required": ["started_at", "finished_at", "written", "confirmed", "replaced", "errors"],
        }
    )
    def get_last_run(self, switch) -> dict | None:
        last_run = self.context["status"].last_run
        return LastRunSerializer(last_run).data if last_run else None

    @extend_schema_field(WindowCountsSerializer(help_text="The switch's windows by status; one being read counts as queued."))
    def get_windows(self, switch) -> dict:
        return WindowCountsSerializer(self.context["status"].windows).data

    @extend_schema_field(serializers.CharField(allow_null=True, help_text="The most common reason among the failed windows."))
    def get_error_code(self, switch) -> str | None:
        return self.context["status"].error_code


def switch_answer(switch: ExtractionSwitch) -> dict:
    """The switch as the API shows it, here and in the store's answer."""
    return SwitchOutputSerializer(switch, context={"status": switch_status(switch=switch)}).data


class ExtractionSwitchApi(CoreApi):
    """`GET` (the switch and how it is doing) and `PUT` (set it) on a store's extraction switch.

    Reading needs `memory` and the policy's read right; setting needs `threads` (also to
    switch it off), `memory` and the write right.
    """

    required_capabilities = {"GET": ("knowledge", "memory"), "PUT": ("knowledge", "memory", "threads")}
    organisation_wide_methods = ("PUT",)
    InputSerializer = SwitchSerializer
    OutputSerializer = SwitchOutputSerializer

    def get(self, request, index_id: str):
        """Read a store's extraction switch

        The switch's settings and how it is doing: its `state`, the `last_run` (what it wrote,
        confirmed and replaced), its `windows` by status and the most common `error_code` among
        the failed ones. Needs `memory` and the read right; 404 when the store has no switch.
        """
        index = index_get_available(caller=self.caller, index_id=index_id, right="read")
        switch = switch_find(index=index)
        if switch is None:
            raise NotFound("This store has no extraction switch.")
        return Response(switch_answer(switch))

    def put(self, request, index_id: str):
        """Set a store's extraction switch

        Core reads the organisation's quiet conversations with the chat model `model` and writes
        what it finds as records of the store. Sent enabled, the body is the whole switch (left-out
        fields take their defaults: the four default types, `with_person`, every 60 minutes);
        sent with `"enabled": false`, it stops and keeps the rest. The sending key becomes the key
        extraction runs under. Needs `threads` (also to switch it off), `memory` and the write
        right. 422 on `model` (not offered), `lessons` (without `episodes`), `types[i]` (a type only
        Core writes), `filters.agent_ids[i]` and `filters.key_ids[i]` (not the organisation's).
        """
        index = index_get_available(caller=self.caller, index_id=index_id, right="write")
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        switch = extraction_switch_set(
            caller=self.caller,
            index=index,
            values=serializer.validated_data,
            sent=set(request.data),
        )
        return Response(switch_answer(switch_find(index=index)))


class ConnectorOutputSerializer(serializers.Serializer):
    id = serializers.CharField()
    kind = serializers.CharField(default="extraction", help_text="What the connector feeds: a store's extraction switch.")
    index_id = serializers.CharField()
    created_at = serializers.DateTimeField()


class ConnectorDetailApi(CoreApi):
    """`GET` and `DELETE /v1/connectors/{id}`: deleting stops the switch reading
    (`objects_missing`, mended by re-sending the switch); it needs `knowledge` and the write
    right on the index, not `threads`."""

    required_capabilities = ("knowledge",)
    organisation_wide_methods = ("DELETE",)
    OutputSerializer = ConnectorOutputSerializer

    def get(self, request, connector_id: str):
        """Read a connector

        The connector through which a store's extraction switch reads the organisation's
        conversations. Needs `knowledge` and an index the key's policy names.
        """
        connector = connector_get_available(caller=self.caller, connector_id=connector_id)
        return Response(self.OutputSerializer(connector).data)

    def delete(self, request, connector_id: str):
        """Delete a connector

        Its switch stops reading (state `objects_missing`) until the switch is sent again, which
        gives it a new connector; what was written stays. Needs `knowledge` and the write right on
        the index, not `threads`.
        """
        connector = connector_get_available(caller=self.caller, connector_id=connector_id, right="write")
        connector_delete(caller=self.principal, connector=connector)
        return Response(status=status.HTTP_204_NO_CONTENT)
