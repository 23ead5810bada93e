from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from core_memory.agents.selectors import agent_get_available, agent_version_latest, agents_list
from core_memory.agents.services import agent_create, agent_version_create
from core_memory.base.api.pagination import IdCursorPagination, paginated_response
from core_memory.base.api.views import CoreApi
from core_memory.base.validation import StrictSerializer
from core_memory.flows.agents import agent_delete
from core_memory.keys.configuration import InjectionConfigSerializer


class AgentOutputSerializer(serializers.Serializer):
    """An agent with its latest version's settings."""

    id = serializers.CharField()
    name = serializers.CharField()
    version = serializers.IntegerField(source="latest_version")
    model = serializers.SerializerMethodField()
    instructions = serializers.SerializerMethodField()
    memory_injection = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    def get_model(self, agent) -> str:
        return agent_version_latest(agent=agent).model

    def get_instructions(self, agent) -> str:
        return agent_version_latest(agent=agent).instructions

    def get_memory_injection(self, agent) -> dict | None:
        return agent_version_latest(agent=agent).memory_injection


class AgentVersionInputSerializer(StrictSerializer):
    """A complete version: what it leaves out is empty, nothing is taken from the previous one."""

    model = serializers.CharField(max_length=200)
    instructions = serializers.CharField(required=False, allow_blank=True, default="", max_length=100_000)
    memory_injection = InjectionConfigSerializer(required=False, allow_null=True, default=None)


class AgentListCreateApi(CoreApi):
    """`GET /v1/agents` and `POST /v1/agents`."""

    organisation_wide_methods = ("POST",)
    pagination_class = IdCursorPagination
    OutputSerializer = AgentOutputSerializer

    class InputSerializer(AgentVersionInputSerializer):
        name = serializers.CharField(max_length=200)

    def get(self, request):
        """List agents

        The organisation's agents, newest first, each with its latest version's model, instructions
        and memory injection block.
        """
        return paginated_response(
            queryset=agents_list(organisation=self.organisation),
            request=request,
            view=self,
            serializer_class=AgentOutputSerializer,
        )

    @extend_schema(responses={201: AgentOutputSerializer})
    def post(self, request):
        """Create an agent

        A named assistant at version 1: its model, instructions and optionally a
        `memory_injection` block (the key's block's shape), which then governs its turns instead of
        the key's. The block's index must be one the saving key's policy names (422 on
        `memory_injection.index_id`). A subject token cannot create agents.
        """
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        agent = agent_create(caller=self.caller, **serializer.validated_data)
        return Response(AgentOutputSerializer(agent).data, status=status.HTTP_201_CREATED)


class AgentDetailApi(CoreApi):
    """`GET /v1/agents/{id}` and `DELETE /v1/agents/{id}`."""

    organisation_wide_methods = ("DELETE",)
    OutputSerializer = AgentOutputSerializer

    def get(self, request, agent_id: str):
        """Read an agent

        The agent at its latest version: its model, instructions and memory injection block.
        """
        agent = agent_get_available(organisation=self.organisation, agent_ref=agent_id)
        return Response(AgentOutputSerializer(agent).data)

    def delete(self, request, agent_id: str):
        """Delete an agent

        The agent and its versions go; turns that ran it keep their record. An agent that an
        extraction switch names in `filters.agent_ids` cannot be deleted (409 naming that store).
        """
        agent = agent_get_available(organisation=self.organisation, agent_ref=agent_id)
        agent_delete(caller=self.principal, agent=agent)
        return Response(status=status.HTTP_204_NO_CONTENT)


class AgentVersionCreateApi(CoreApi):
    """`POST /v1/agents/{id}/versions`: answers the agent at its new version."""

    organisation_wide_methods = ("POST",)

    InputSerializer = AgentVersionInputSerializer
    OutputSerializer = AgentOutputSerializer

    @extend_schema(responses={201: AgentOutputSerializer})
    def post(self, request, agent_id: str):
        """Add an agent version

        A complete new version (model, instructions, memory injection block): what it leaves out is
        empty, nothing is taken from the previous version. Answers the agent at its new version.
        """
        agent = agent_get_available(organisation=self.organisation, agent_ref=agent_id)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        agent = agent_version_create(agent=agent, caller=self.caller, **serializer.validated_data)
        return Response(AgentOutputSerializer(agent).data, status=status.HTTP_201_CREATED)
