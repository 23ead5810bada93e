import pytest

from audit.models import AuditEvent
from core_memory.agents.models import Agent, AgentVersion
from tests.core_memory.conftest import INJECTION_BLOCK_DEFAULTS
from tests.factories import make_index

pytestmark = pytest.mark.django_db


@pytest.fixture
def offered(settings):
    settings.CORE_MODELS = [{"id": "fake-chat", "provider": "openai", "base_url": "http://127.0.0.1:9/v1", "api_key_env": None}]


def create(client, **body):
    return client.post("/v1/agents", {"name": "billing-desk", "model": "fake-chat", **body}, format="json")


def test_an_agent_is_created_at_version_one_and_each_new_version_replaces_it_whole(tenant, offered):
    """R-7.3: a version is complete; the latest governs."""
    block = {"enabled": True, "index_id": tenant.index.id, "types": ["fact"]}
    created = create(tenant.client(), instructions="Wees beleefd.", memory_injection=block)
    assert created.status_code == 201
    agent = created.json()
    assert (agent["version"], agent["instructions"]) == (1, "Wees beleefd.")
    assert agent["memory_injection"] == {**INJECTION_BLOCK_DEFAULTS, "enabled": True, "index_id": tenant.index.id, "types": ["fact"]}

    second = tenant.client().post(f"/v1/agents/{agent['id']}/versions", {"model": "fake-chat"}, format="json")

    assert second.status_code == 201
    assert (second.json()["version"], second.json()["instructions"], second.json()["memory_injection"]) == (2, "", None)
    assert tenant.client().get(f"/v1/agents/{agent['id']}").json() == second.json()
    assert list(AgentVersion.objects.filter(agent_id=agent["id"]).values_list("version", flat=True)) == [1, 2]
    assert list(AuditEvent.objects.filter(target=agent["id"]).values_list("action", flat=True).order_by("id")) == [
        "agent.created", "agent.version_created"
    ]


def test_agents_list_shows_the_organisations_live_agents(tenant, other_tenant, offered):
    """R-7.3, R-2.5."""
    first = create(tenant.client(), name="een").json()
    create(tenant.client(), name="twee")
    create(other_tenant.client(), name="vreemd")
    tenant.client().delete(f"/v1/agents/{first['id']}")

    listed = tenant.client().get("/v1/agents").json()

    assert [agent["name"] for agent in listed["data"]] == ["twee"]
    assert listed["next_cursor"] is None


def test_listing_agents_reads_their_latest_versions_in_one_query_whatever_their_number(
    tenant, offered, django_assert_num_queries
):
    """STYLE (no per-row queries): the key, the agents, and one prefetch of their latest versions."""
    client = tenant.client()
    for number in range(6):
        agent = create(client, name=f"agent-{number}").json()
        client.post(f"/v1/agents/{agent['id']}/versions", {"model": "fake-chat", "instructions": "v2"}, format="json")

    with django_assert_num_queries(3):
        listed = client.get("/v1/agents").json()

    assert [agent["instructions"] for agent in listed["data"]] == ["v2"] * 6


def test_a_deleted_agent_is_gone_and_its_name_free_again(tenant, offered):
    """R-7.3."""
    agent = create(tenant.client()).json()

    assert tenant.client().delete(f"/v1/agents/{agent['id']}").status_code == 204

    assert tenant.client().get(f"/v1/agents/{agent['id']}").status_code == 404
    assert create(tenant.client()).status_code == 201
    assert AuditEvent.objects.filter(action="agent.deleted", target=agent["id"], actor=tenant.key.id).count() == 1


def test_the_same_name_twice_is_a_409(tenant, offered):
    create(tenant.client())

    response = create(tenant.client())

    assert (response.status_code, response.json()["error"]["param"]) == (409, "name")
    assert Agent.objects.count() == 1


@pytest.mark.parametrize("case", ["other_organisation", "not_in_policy", "deleted", "missing"])
def test_memory_injection_on_an_index_the_key_cannot_name_is_a_422(tenant, other_tenant, offered, case):
    """R-7.3: 422 on `memory_injection.index_id`; nothing saved."""
    client, key = tenant.key_client(read=(tenant.index.id,), write=())
    index_id = {
        "other_organisation": other_tenant.index.id,
        "not_in_policy": make_index(tenant.organisation, name="ander").id,
        "deleted": tenant.index.id,
        "missing": "idx_nope",
    }[case]
    if case == "deleted":
        tenant.client().delete(f"/v1/indexes/{tenant.index.id}")

    response = create(client, memory_injection={"enabled": True, "index_id": index_id})

    assert response.status_code == 422
    assert response.json()["error"]["param"] == "memory_injection.index_id"
    assert not Agent.objects.exists()


def test_memory_injection_on_an_index_the_policy_names_only_for_reading_is_saved(tenant, offered):
    """R-7.3: the policy names it (read)."""
    client, _ = tenant.key_client(read=(tenant.index.id,), write=())

    response = create(client, memory_injection={"enabled": False, "index_id": tenant.index.id})

    assert response.status_code == 201
    assert response.json()["memory_injection"] == {**INJECTION_BLOCK_DEFAULTS, "index_id": tenant.index.id}


def test_a_new_version_is_checked_against_the_saving_keys_policy(tenant, offered):
    """R-7.3: the key that saves the version, not the one that made the agent."""
    agent = create(tenant.client()).json()
    client, _ = tenant.key_client(read=(), write=())

    response = client.post(
        f"/v1/agents/{agent['id']}/versions",
        {"model": "fake-chat", "memory_injection": {"enabled": True, "index_id": tenant.index.id}},
        format="json",
    )

    assert (response.status_code, response.json()["error"]["param"]) == (422, "memory_injection.index_id")
    assert AgentVersion.objects.filter(agent_id=agent["id"]).count() == 1


@pytest.mark.parametrize(
    ("body", "status", "param"),
    [
        ({"model": "not-offered"}, 422, "model"),
        ({"memory_injection": {"enabled": True, "index_id": None}}, 400, "memory_injection.index_id"),
        ({"memory_injection": {"enabled": True, "index_id": "idx_x", "limit": -1}}, 400, "memory_injection.limit"),
        ({"memory_injection": {"enabled": True, "index_id": "idx_x", "colour": "blauw"}}, 400, "memory_injection.colour"),
        ({"name": ""}, 400, "name"),
    ],
)
def test_a_bad_agent_is_refused_naming_the_field(tenant, offered, body, status, param):
    """R-2.3, R-3.6."""
    response = create(tenant.client(), **body)

    assert (response.status_code, response.json()["error"]["param"]) == (status, param)
    assert not Agent.objects.exists()


def test_another_organisations_agent_is_a_404(tenant, other_tenant, offered):
    """R-2.5: read, new version and delete alike; nothing changes."""
    agent = create(other_tenant.client()).json()
    client = tenant.client()

    assert client.get(f"/v1/agents/{agent['id']}").status_code == 404
    assert client.post(f"/v1/agents/{agent['id']}/versions", {"model": "fake-chat"}, format="json").status_code == 404
    assert client.delete(f"/v1/agents/{agent['id']}").status_code == 404
    assert Agent.objects.get(pk=agent["id"]).deleted_at is None
    assert AgentVersion.objects.filter(agent_id=agent["id"]).count() == 1


def test_agents_need_no_capability_but_a_credential(tenant, anonymous, offered):
    """R-2.7: `/v1/agents…` needs no capability."""
    bare, _ = tenant.key_client(capabilities=(), read=(), write=())

    assert create(bare).status_code == 201
    assert anonymous.get("/v1/agents").status_code == 401
    assert create(anonymous, name="anoniem").status_code == 401
    assert Agent.objects.count() == 1
