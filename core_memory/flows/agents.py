"""Deleting an agent: refused with 409 while an extraction switch names it in
`filters.agent_ids`. The check reads extraction, which stands above agents, so it lives here."""
from __future__ import annotations

from django.db import transaction

from core_memory.agents.models import Agent
from core_memory.agents.services import agent_delete_within
from core_memory.base.callers import Caller
from core_memory.base.errors import Conflict
from extraction.selectors import switches_naming_agent


@transaction.atomic(durable=True)
def agent_delete(*, caller: Caller, agent: Agent) -> None:
    """Marks the agent deleted, unless a switch names it. The agent's row is locked before the
    switches are read, and a switch that names it locks it too while it is saved, so neither
    can slip past the other."""
    locked = Agent.objects.for_organisation(caller.organisation_id).live().select_for_update().filter(pk=agent.pk).first()
    if locked is None:
        return
    stores = switches_naming_agent(caller=caller, agent_id=agent.pk)
    if stores:
        raise Conflict(
            f"The extraction switch of store {stores[0]} names this agent in filters.agent_ids; "
            "take it out of the switch's filters first.",
            param=None,
        )
    agent_delete_within(caller=caller, agent=locked)
