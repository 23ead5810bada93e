"""The README's first turn works as written (issue 14): an organisation from `createorg`, an
index, the key's injection pointed at it, a record for Anna, and a turn for her that the model
answers with her record in its memory block and the search tool offered."""
from __future__ import annotations

import pytest

from tests.factories import client_for, createorg

pytestmark = pytest.mark.django_db


def test_the_readmes_first_turn(fake_model):
    owner = createorg("Acme", "--timezone", "Europe/Amsterdam")
    client = client_for(owner["key"])
    index = client.post("/v1/indexes", {"name": "klanten"}, format="json").json()
    configured = client.patch(
        f"/v1/tenants/{owner['organisation_id']}/keys/{owner['key_id']}",
        {"memory": {"retrieval_tool": True, "write_tool": True, "injection": {"enabled": True, "index_id": index["id"]}}},
        format="json",
    )
    written = client_for(owner["key"], subject="anna").post(
        "/v1/memory", {"index_id": index["id"], "type": "preference", "text": "Anna wil facturen per e-mail."}, format="json"
    )
    fake_model.reply("Ik stuur de factuur per e-mail.")

    turn = client.post(
        "/v1/responses",
        {"model": "fake-chat", "user": "anna", "input": "Stuur de factuur.",
         "tools": [{"type": "tool", "name": f"memory__{index['id']}__search"}]},
        format="json",
    )

    assert (configured.status_code, written.status_code, turn.status_code) == (200, 201, 200)
    assert turn.json()["status"] == "completed"
    trace = turn.json()["trace"]["memory"]
    # The README's shape of the trace: counts of what was injected, not the records.
    assert trace == {
        "source": "key",
        "index_id": index["id"],
        "injected": 1,
        "sections": {"commitments": 0, "behaviour": 0, "about_this_person": 1, "organisation": 0, "past_sessions": 0},
        "dropped_by_count": 0,
        "dropped_by_budget": 0,
        "estimated_tokens": trace["estimated_tokens"],
    }
    assert trace["estimated_tokens"] > 0
    sent = fake_model.requests[0].body
    assert '"text":"Anna wil facturen per e-mail."' in sent["messages"][0]["content"]
    assert [tool["function"]["name"] for tool in sent["tools"]] == [f"memory__{index['id']}__search"]
