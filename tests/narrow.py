"""The "narrow key reads another key's thread" world, shared by the API's and MCP's isolation
matrices: the owner ran a turn for zoe in which the model searched index A1, so the thread keeps
an A1 record's text; index A2 is the one a narrow key will be given."""
from __future__ import annotations

from core_memory.base.callers import Caller
from memory.services.writes import RecordDraft, record_write
from tests.factories import make_index, resolved_for
from tests.fake_model import completion


def owner_turn_that_read_a1(tenant, fake_model, *, text: str):
    """The owner's turn (its answer) and index A2; the turn's tool result holds `text`."""
    record_write(caller=Caller(key=tenant.key, subject="zoe", actor="test"), index=tenant.index, draft=RecordDraft(type="fact", text=text))
    a2 = resolved_for(tenant.key, make_index(tenant.organisation, name="a2"))
    tool = f"memory__{tenant.index.id}__search"
    fake_model.answer(completion(tool_calls=[("call_1", tool, {"query": "Haarlem"})]))
    fake_model.reply("Zoe woont in Haarlem.")
    turn = tenant.client(subject="zoe").post(
        "/v1/responses", {"model": "fake-chat", "input": "Waar woon ik?", "tools": [{"type": "tool", "name": tool}]}, format="json"
    )
    assert turn.status_code == 200 and text in turn.content.decode()
    return turn, a2
