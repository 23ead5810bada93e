"""The memory tools a key may offer (memory.tools.catalogue, R-6.1–R-6.3, R-6.5): names, descriptions, resolution."""
from __future__ import annotations

from datetime import UTC, datetime

import pytest

from core_memory.base.errors import InvalidRequest
from core_memory.base.callers import Caller
from memory.tools.catalogue import memory_tools_list, memory_tools_resolve
from stores.services import index_delete
from tests.factories import make_index
from tests.memory.tools.builders import NOW, search_name, tool_key, write_name

pytestmark = pytest.mark.django_db


def write_description(index, *, today: str) -> str:
    return (
        f'Remember something learnt in this conversation in memory index {index.id} ("{index.name}"), '
        "for the person this conversation is for (shared when it names nobody). "
        f"Allowed types: fact, preference, commitment, behaviour. Today is {today}; give due_at and expires_at as ISO 8601 with an offset."
    )


def test_tools_list_names_both_tools_of_every_index_the_policy_names(tenant, other_tenant):
    """R-6.1, R-6.2: names after the index id, JSON-Schema parameters, `offered` from the key's configuration."""
    named = make_index(tenant.organisation, name="named")
    make_index(tenant.organisation, name="not in the policy")
    key = tool_key(tenant, read=[tenant.index.id, named.id], write=[], write_tool=True)

    listed = memory_tools_list(caller=Caller(key=key), now=NOW, timezone_name="UTC")

    by_name = {tool["name"]: tool for tool in listed}
    # By index id, so in the order the indexes were made; search before write.
    assert [tool["name"] for tool in listed] == [
        search_name(tenant.index), write_name(tenant.index), search_name(named), write_name(named)
    ]
    assert by_name[search_name(named)]["offered"] is True
    assert by_name[write_name(named)]["offered"] is False  # the policy does not allow writing
    assert by_name[search_name(named)]["parameters"]["required"] == ["query"]
    assert set(by_name[write_name(named)]["parameters"]["properties"]) == {"type", "text", "metadata", "confidence", "due_at", "expires_at"}
    assert all(set(tool) == {"name", "description", "parameters", "offered"} for tool in listed)


def test_tools_list_offers_what_the_keys_memory_configuration_switches_on(tenant):
    """R-6.2: `retrieval_tool` / `write_tool`."""
    key = tool_key(tenant, retrieval_tool=False, write_tool=True)

    listed = {tool["name"]: tool["offered"] for tool in memory_tools_list(caller=Caller(key=key), now=NOW, timezone_name="UTC")}

    assert listed == {search_name(tenant.index): False, write_name(tenant.index): True}


def test_tools_list_leaves_out_deleted_and_other_organisations_indexes(tenant, other_tenant):
    """R-4.2, R-12.1."""
    gone = make_index(tenant.organisation, name="gone")
    index_delete(caller=Caller.system(organisation_id=gone.organisation_id, actor="test"), index=gone)

    names = [tool["name"] for tool in memory_tools_list(caller=Caller(key=tool_key(tenant)))]

    assert names == [search_name(tenant.index), write_name(tenant.index)]


def test_resolve_answers_openai_function_definitions(tenant):
    """R-6.3, R-13.5."""
    key = tool_key(tenant)

    tools = memory_tools_resolve(
        caller=Caller(key=key), requested=[(0, search_name(tenant.index)), (1, write_name(tenant.index))], timezone_name="UTC", now=NOW
    )

    assert [tool.name for tool in tools] == [search_name(tenant.index), write_name(tenant.index)]
    definition = tools[0].definition()
    assert definition["type"] == "function"
    assert definition["function"]["name"] == search_name(tenant.index)
    assert definition["function"]["parameters"]["type"] == "object"
    assert set(definition["function"]) == {"name", "description", "parameters"}


def test_resolve_offers_a_tool_asked_for_twice_once(tenant):
    """R-13.5: a model refuses two functions of one name; the second mention adds nothing."""
    key = tool_key(tenant)

    tools = memory_tools_resolve(
        caller=Caller(key=key),
        requested=[(0, search_name(tenant.index)), (1, write_name(tenant.index)), (2, search_name(tenant.index))],
        timezone_name="UTC",
        now=NOW,
    )

    assert [tool.name for tool in tools] == [search_name(tenant.index), write_name(tenant.index)]


@pytest.mark.parametrize(
    "case",
    ["write_tool_off", "retrieval_tool_off", "policy_lacks_index", "read_only_policy_write", "other_organisation",
     "deleted_index", "no_memory_capability", "malformed"],
)
def test_resolve_refuses_a_tool_the_key_may_not_have_with_a_400_on_its_position(tenant, other_tenant, case):
    """R-6.3: 400 with `param: "tools[i]"`."""
    elsewhere = make_index(tenant.organisation, name="elsewhere")
    name = write_name(tenant.index) if case in ("write_tool_off", "read_only_policy_write") else search_name(tenant.index)
    key = {
        "write_tool_off": lambda: tool_key(tenant, write_tool=False),
        "retrieval_tool_off": lambda: tool_key(tenant, retrieval_tool=False),
        "policy_lacks_index": lambda: tool_key(tenant, read=[elsewhere.id], write=[elsewhere.id]),
        "read_only_policy_write": lambda: tool_key(tenant, write=[]),
        "other_organisation": lambda: tool_key(tenant),
        "deleted_index": lambda: tool_key(tenant),
        "no_memory_capability": lambda: tool_key(tenant, capabilities=["knowledge"]),
        "malformed": lambda: tool_key(tenant),
    }[case]()
    if case == "other_organisation":
        name = search_name(other_tenant.index)
    if case == "deleted_index":
        index_delete(caller=Caller.system(organisation_id=tenant.index.organisation_id, actor="test"), index=tenant.index)
    if case == "malformed":
        name = f"memory__{tenant.index.id}__delete"

    # A tool the key may have goes first, so the refusal must name the second position.
    allowed_first = [] if case in ("retrieval_tool_off", "no_memory_capability") else [(0, search_name(elsewhere))]

    with pytest.raises(InvalidRequest) as refused:
        memory_tools_resolve(
            caller=Caller(key=key), requested=[*allowed_first, (1, name)], timezone_name="UTC", now=NOW,
        )

    assert refused.value.param == "tools[1]"
    assert refused.value.status_code == 400


def test_write_tool_description_states_today_in_the_turns_time_zone(tenant):
    """R-6.5: at 2026-11-30T11:00Z it is already 2026-12-01 on Kiritimati (UTC+14)."""
    moment = datetime(2026, 11, 30, 11, 0, tzinfo=UTC)
    caller = Caller(key=tool_key(tenant))
    requested = [(0, write_name(tenant.index))]

    (far,) = memory_tools_resolve(caller=caller, requested=requested, timezone_name="Pacific/Kiritimati", now=moment)
    (utc,) = memory_tools_resolve(caller=caller, requested=requested, timezone_name="UTC", now=moment)

    assert far.description == write_description(tenant.index, today="2026-12-01")
    assert utc.description == write_description(tenant.index, today="2026-11-30")
    assert utc.parameters["properties"]["type"]["enum"] == ["fact", "preference", "commitment", "behaviour"]


def test_tools_list_dates_the_write_tool_in_the_organisations_time_zone_by_default(tenant):
    """R-6.5: the organisation's zone when the request names none."""
    tenant.organisation.timezone = "Pacific/Kiritimati"
    tenant.organisation.save(update_fields=["timezone"])
    key = tool_key(tenant)
    key.organisation = tenant.organisation

    listed = memory_tools_list(caller=Caller(key=key), now=datetime(2026, 11, 30, 11, 0, tzinfo=UTC))

    assert listed[1]["description"] == write_description(tenant.index, today="2026-12-01")
