"""Deleting an agent (core_memory.flows.agents, R-7.3): refused while an extraction switch names it."""
import pytest

from audit.models import AuditEvent
from core_memory.agents.models import Agent
from extraction.models import ExtractionSwitch
from tests.extraction.builders import switch_put
from tests.factories import make_index

pytestmark = pytest.mark.django_db


def test_deleting_an_agent_a_switch_names_is_a_409_naming_the_store(tenant, fake_model):
    """R-7.3; taken out of the switch's filters, it can go."""
    agent_id = tenant.client().post("/v1/agents", {"name": "desk", "model": "fake-chat"}, format="json").json()["id"]
    other_store = make_index(tenant.organisation, name="second")
    switch_put(tenant.client(), tenant.index.id)
    switch_put(tenant.client(), other_store.id, filters={"agent_ids": [agent_id]})

    refused = tenant.client().delete(f"/v1/agents/{agent_id}")

    assert refused.status_code == 409
    assert refused.json()["error"] == {
        "type": "conflict_error",
        "message": f"The extraction switch of store {other_store.id} names this agent in filters.agent_ids; "
        "take it out of the switch's filters first.",
        "param": None,
    }
    assert Agent.objects.get(pk=agent_id).deleted_at is None
    assert not AuditEvent.objects.filter(action="agent.deleted").exists()

    switch_put(tenant.client(), other_store.id, filters={"agent_ids": []})
    assert tenant.client().delete(f"/v1/agents/{agent_id}").status_code == 204


def test_a_switch_that_is_off_still_names_its_agents(tenant, fake_model):
    """R-7.3: "zolang een schakelaar een agent noemt" — on or off."""
    agent_id = tenant.client().post("/v1/agents", {"name": "desk", "model": "fake-chat"}, format="json").json()["id"]
    switch_put(tenant.client(), tenant.index.id, filters={"agent_ids": [agent_id]})
    tenant.client().put(f"/v1/memory/stores/{tenant.index.id}/extraction", {"enabled": False}, format="json")

    assert tenant.client().delete(f"/v1/agents/{agent_id}").status_code == 409


def test_another_organisations_switch_does_not_hold_an_agent(tenant, other_tenant, fake_model):
    agent_id = tenant.client().post("/v1/agents", {"name": "desk", "model": "fake-chat"}, format="json").json()["id"]
    switch_put(other_tenant.client(), other_tenant.index.id)
    ExtractionSwitch.objects.filter(organisation=other_tenant.organisation).update(filter_agent_ids=[agent_id])

    assert tenant.client().delete(f"/v1/agents/{agent_id}").status_code == 204
