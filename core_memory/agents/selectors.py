"""Scoped reads of agents: missing, deleted and another organisation's are one 404."""
from __future__ import annotations

from django.db.models import F, Prefetch, QuerySet

from core_memory.agents.models import Agent, AgentVersion
from core_memory.base.errors import NotFound
from core_memory.organisations.models import Organisation

AGENT_ID_PREFIX = "agt_"


def _with_latest_version(agents: QuerySet[Agent], *, organisation: Organisation) -> QuerySet[Agent]:
    latest = AgentVersion.objects.for_organisation(organisation).filter(version=F("agent__latest_version"))
    return agents.prefetch_related(Prefetch("versions", queryset=latest, to_attr="latest_versions"))


def agents_list(*, organisation: Organisation) -> QuerySet[Agent]:
    return _with_latest_version(Agent.objects.for_organisation(organisation).live(), organisation=organisation)


def agent_get_available(*, organisation: Organisation, agent_ref: str, param: str | None = None) -> Agent:
    """A live agent of the organisation, by its id or (in a turn's `agent` field) its name."""
    agents = Agent.objects.for_organisation(organisation).live()
    if not isinstance(agent_ref, str):
        raise NotFound("No such agent.", param=param)
    agents = agents.filter(id=agent_ref) if agent_ref.startswith(AGENT_ID_PREFIX) else agents.filter(name=agent_ref)
    agent = _with_latest_version(agents, organisation=organisation).first()
    if agent is None:
        raise NotFound("No such agent.", param=param)
    return agent


def agent_version_latest(*, agent: Agent) -> AgentVersion:
    latest = getattr(agent, "latest_versions", None)
    if latest:
        return latest[0]
    return agent.versions.get(version=agent.latest_version)
