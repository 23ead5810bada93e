"""Agent writes, each in its own transaction with its audit event."""
from __future__ import annotations

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from audit.services import audit_event_record
from core_memory.agents.models import Agent, AgentVersion
from core_memory.base.errors import Conflict, NotFound, Unprocessable
from core_memory.base.callers import Caller
from core_memory.llm.registry import model_get
from stores.selectors import index_get_available


def agent_memory_injection_check(*, caller: Caller, memory_injection: dict | None) -> dict | None:
    """422 on `memory_injection.index_id` unless the block's index is one of the organisation's
    that the saving caller's key's own policy names. The block's shape is validated by the caller
    with `InjectionConfigSerializer`, which fills every default."""
    if memory_injection is None:
        return None
    block = dict(memory_injection)
    if block.get("index_id") is not None:
        try:
            index_get_available(caller=caller, index_id=block["index_id"])
        except NotFound:
            raise Unprocessable(
                "The index must be one of your organisation's that this key's policy names.",
                param="memory_injection.index_id",
            ) from None
    return block


def _version_add(*, agent: Agent, caller: Caller, model: str, instructions: str, memory_injection: dict | None) -> AgentVersion:
    key = caller.key
    model_get(organisation=key.organisation, model_id=model, param="model")
    block = agent_memory_injection_check(caller=caller, memory_injection=memory_injection)
    Agent.objects.for_organisation(agent.organisation_id).filter(pk=agent.pk).update(
        latest_version=F("latest_version") + 1, updated_at=timezone.now()
    )
    agent.refresh_from_db(fields=["latest_version", "updated_at"])
    version = AgentVersion.objects.create(
        agent=agent,
        version=agent.latest_version,
        model=model,
        instructions=instructions,
        memory_injection=block,
        created_by=key.id,
    )
    agent.latest_versions = [version]
    return version


@transaction.atomic(durable=True)
def agent_create(
    *, caller: Caller, name: str, model: str, instructions: str = "", memory_injection: dict | None = None
) -> Agent:
    """A new agent of the caller's organisation with its first version, saved by the caller's key."""
    try:
        with transaction.atomic():
            agent = Agent.objects.create(organisation_id=caller.organisation_id, name=name)
    except IntegrityError:
        raise Conflict(f"An agent named {name!r} exists already.", param="name") from None
    version = _version_add(agent=agent, caller=caller, model=model, instructions=instructions, memory_injection=memory_injection)
    audit_event_record(
        caller=caller, action="agent.created", target=agent.id, details={"version": version.version}
    )
    return agent


@transaction.atomic(durable=True)
def agent_version_create(
    *, agent: Agent, caller: Caller, model: str, instructions: str = "", memory_injection: dict | None = None
) -> Agent:
    """A new, complete version, saved by the caller's key; turns run it from now on."""
    locked = Agent.objects.for_organisation(agent.organisation_id).live().select_for_update().filter(pk=agent.pk).first()
    if locked is None:
        raise NotFound("No such agent.")
    version = _version_add(agent=locked, caller=caller, model=model, instructions=instructions, memory_injection=memory_injection)
    audit_event_record(
        caller=caller,
        action="agent.version_created",
        target=locked.id,
        details={"version": version.version},
    )
    return locked


def agent_delete_within(*, caller: Caller, agent: Agent) -> None:
    """Marks the agent deleted (threads keep naming it, turns can no longer run it), inside
    the caller's transaction: the flow that checks what still names the agent owns it
    (core_memory.flows.agents)."""
    locked = Agent.objects.for_organisation(agent.organisation_id).live().select_for_update().filter(pk=agent.pk).first()
    if locked is None:
        return
    locked.deleted_at = timezone.now()
    locked.save(update_fields=["deleted_at", "updated_at"])
    audit_event_record(caller=caller, action="agent.deleted", target=locked.id)
