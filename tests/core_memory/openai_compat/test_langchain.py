"""LangChain's ChatOpenAI, pointed at Core's OpenAI-compatible base URL, gets memory (issue 21):
the model sees the person's memory block, and its write tool call becomes her record; the
memory tool never reaches LangChain as a tool call. Plain and streamed."""
from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_openai import ChatOpenAI

from tests.core_memory.openai_compat.test_sdk import assert_memory_injected_and_written, system_text, write_call

# A gunicorn starting on a busy machine takes its time.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(600)]


def chat(app) -> ChatOpenAI:
    return ChatOpenAI(
        model="fake-chat", base_url=app.base_url, api_key=app.secret, max_retries=0, default_headers={"X-Core-Subject": "anna"}
    )


def test_chat_openai_gets_memory_and_writes_it(app, model):
    model.answer(write_call(app, "Anna werkt op dinsdag thuis."))
    model.reply("Dan plan ik het op dinsdag, thuis.")

    answer = chat(app).invoke([SystemMessage("Je bent de assistent van Acme."), HumanMessage("Plan een gesprek met me.")])

    assert answer.content == "Dan plan ik het op dinsdag, thuis."
    assert answer.tool_calls == []
    # The app's system prompt first, then Core's memory block, then the conversation.
    assert [message["role"] for message in model.requests[0].body["messages"]] == ["system", "system", "user"]
    assert system_text(model.requests[0]).startswith("Je bent de assistent van Acme.\n")
    assert_memory_injected_and_written(app, model, "Anna werkt op dinsdag thuis.")


def test_chat_openai_streams_with_memory(app, model):
    model.answer(write_call(app, "Anna wil herinneringen per sms."))
    model.reply("Ik stuur je een sms.")

    pieces = list(chat(app).stream("Herinner me morgen."))

    assert "".join(piece.content for piece in pieces) == "Ik stuur je een sms."
    assert not any(piece.tool_call_chunks for piece in pieces)
    assert_memory_injected_and_written(app, model, "Anna wil herinneringen per sms.")
