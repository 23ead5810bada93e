"""The official `openai` SDK, unchanged but for `base_url` and `api_key`, gets Core's memory (issue
21): sync, async and streaming Chat Completions, Responses with `responses.create`,
`responses.stream()` and `previous_response_id`, function tools round trip. Each test asserts
that memory was injected (the model saw Anna's record in the block) and written (the model's
write tool call became a record of hers), and answers are checked against the SDK's own types."""
from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor

import httpx
import jsonschema
import openai
import pytest
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response as OpenAIResponse

from core_memory.base.callers import Caller
from core_memory.threads.models import Item, Response, Thread
from tests.core_memory.openai_compat.conftest import ANNA_RECORD
from tests.fake_model import completion

# A gunicorn starting on a busy machine takes its time.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(600)]


def client(app, **options) -> openai.OpenAI:
    return openai.OpenAI(base_url=app.base_url, api_key=app.secret, max_retries=0, **options)


def conforms(model_type, body: dict) -> None:
    """`body` is valid for the SDK's own type: its JSON schema, and its pydantic validation."""
    jsonschema.validate(body, model_type.model_json_schema())
    model_type.model_validate(body)


def write_call(app, text: str, *, call_id: str = "call_write") -> dict:
    tool = f"memory__{app.index.id}__write"
    return completion(tool_calls=[(call_id, tool, {"type": "preference", "text": text})])


def system_text(request) -> str:
    return "\n".join(message["content"] for message in request.body["messages"] if message["role"] == "system")


def assert_memory_injected_and_written(app, model, written: str) -> None:
    first = model.requests[0].body
    assert ANNA_RECORD in system_text(model.requests[0])
    assert {tool["function"]["name"] for tool in first["tools"]} >= {
        f"memory__{app.index.id}__search", f"memory__{app.index.id}__write"
    }
    assert ("anna", "preference", written, "tool") in app.records()


def test_a_sync_chat_completion_gets_memory_and_writes_it(app, model):
    """Issue 21 (1): the block reaches the model; the memory tool runs inside Core, unseen."""
    model.answer(write_call(app, "Anna wil een factuur per kwartaal."))
    model.reply("Genoteerd: per kwartaal.")

    raw = client(app).chat.completions.with_raw_response.create(
        model="fake-chat", messages=[{"role": "user", "content": "Stuur mijn facturen per kwartaal."}], user="anna", temperature=0.2
    )
    answer = raw.parse()

    assert answer.choices[0].message.content == "Genoteerd: per kwartaal."
    assert answer.choices[0].message.tool_calls is None
    assert answer.choices[0].finish_reason == "stop"
    assert_memory_injected_and_written(app, model, "Anna wil een factuur per kwartaal.")
    assert [request.body["temperature"] for request in model.requests] == [0.2, 0.2]
    conforms(ChatCompletion, json.loads(raw.content))
    # The Core turn behind it: named in a header, readable on Core's own API, with the hidden tool call.
    response_id = raw.headers["X-Core-Response-Id"]
    assert answer.id == response_id
    turn = Response.objects.get(pk=response_id)
    assert (turn.subject, turn.status, turn.trace["memory"]["injected"]) == ("anna", "completed", 1)
    core = httpx.get(f"{app.base_url.removesuffix('/openai/v1')}/v1/responses/{response_id}", headers={"Authorization": f"Bearer {app.secret}"})
    assert [(item["kind"], item["name"]) for item in core.json()["output"]] == [
        ("tool_call", f"memory__{app.index.id}__write"), ("tool_result", f"memory__{app.index.id}__write"), ("message", None)
    ]
    assert answer.model_extra["core"]["trace"]["memory"]["injected"] == 1


def test_an_async_chat_completion_gets_memory_and_writes_it(app, model):
    """Issue 21 (4): AsyncOpenAI; the person named by X-Core-Subject."""
    model.answer(write_call(app, "Anna belt liever 's ochtends."))
    model.reply("Ik bel je 's ochtends.")

    async def ask():
        async with openai.AsyncOpenAI(base_url=app.base_url, api_key=app.secret, max_retries=0, default_headers={"X-Core-Subject": "anna"}) as sdk:
            return await sdk.chat.completions.create(model="fake-chat", messages=[{"role": "user", "content": "Bel me morgen."}])

    with ThreadPoolExecutor(max_workers=1) as pool:
        answer = pool.submit(asyncio.run, ask()).result(timeout=60)

    assert answer.choices[0].message.content == "Ik bel je 's ochtends."
    assert_memory_injected_and_written(app, model, "Anna belt liever 's ochtends.")


def test_a_streamed_chat_completion_is_chunks_ending_in_done(app, model):
    """Issue 21 (1): chunk SSE with `[DONE]`, usage last when asked; memory tools unseen in the stream."""
    model.answer(write_call(app, "Anna wil Nederlandstalige facturen."))
    model.reply("Goed, in het Nederlands.")

    with httpx.stream(
        "POST", f"{app.base_url}/chat/completions", headers={"Authorization": f"Bearer {app.secret}"},
        json={"model": "fake-chat", "messages": [{"role": "user", "content": "Facturen in het Nederlands."}], "user": "anna",
              "stream": True, "stream_options": {"include_usage": True}}, timeout=30,
    ) as raw:
        lines = [line for line in raw.iter_lines() if line]
    assert lines[-1] == "data: [DONE]"
    chunks = [json.loads(line.removeprefix("data: ")) for line in lines[:-1]]
    for chunk in chunks:
        conforms(ChatCompletionChunk, chunk)

    streamed = list(client(app).chat.completions.create(
        model="fake-chat", messages=[{"role": "user", "content": "Nog eens."}], user="anna", stream=True
    ))
    text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks_of(streamed))

    assert "".join(chunk["choices"][0]["delta"].get("content") or "" for chunk in chunks if chunk["choices"]) == "Goed, in het Nederlands."
    assert [chunk["choices"][0]["finish_reason"] for chunk in chunks if chunk["choices"]][-1] == "stop"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] == 30
    assert not any("tool_calls" in chunk["choices"][0]["delta"] for chunk in chunks if chunk["choices"])
    assert text == "ok"
    assert_memory_injected_and_written(app, model, "Anna wil Nederlandstalige facturen.")


def chunks_of(stream):
    return [chunk for chunk in stream if chunk.choices]


def test_a_callers_function_tool_goes_back_to_the_caller_and_its_result_to_the_model(app, model):
    """Issue 21 (1): the caller's own tools pass through; a call comes back as tool_calls, and the
    caller's tool message reaches the model in the next request."""
    weather = {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
                                                 "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}
    model.answer(completion(tool_calls=[("call_weather", "get_weather", {"city": "Utrecht"})]))
    model.reply("Het is zonnig in Utrecht.")
    sdk = client(app)
    messages = [{"role": "user", "content": "Wat voor weer is het in Utrecht?"}]

    first = sdk.chat.completions.create(model="fake-chat", messages=messages, tools=[weather], user="anna")
    call = first.choices[0].message.tool_calls[0]
    messages += [first.choices[0].message.model_dump(exclude_none=True), {"role": "tool", "tool_call_id": call.id, "content": "zonnig, 21 graden"}]
    second = sdk.chat.completions.create(model="fake-chat", messages=messages, tools=[weather], user="anna")

    assert (first.choices[0].finish_reason, call.function.name, json.loads(call.function.arguments)) == ("tool_calls", "get_weather", {"city": "Utrecht"})
    assert second.choices[0].message.content == "Het is zonnig in Utrecht."
    sent = model.requests[1].body
    assert "get_weather" in {tool["function"]["name"] for tool in sent["tools"]}
    assert sent["messages"][-2]["tool_calls"][0]["id"] == "call_weather"
    assert sent["messages"][-1] == {"role": "tool", "tool_call_id": "call_weather", "content": "zonnig, 21 graden"}
    assert ANNA_RECORD in system_text(model.requests[1])


def test_responses_create_gets_memory_and_writes_it(app, model):
    """Issue 21 (2): a string input and instructions; `output_text` is the answer."""
    model.answer(write_call(app, "Anna heeft een nieuw adres."))
    model.reply("Ik heb je nieuwe adres genoteerd.")

    raw = client(app).responses.with_raw_response.create(
        model="fake-chat", input="Ik ben verhuisd.", instructions="Antwoord kort.", user="anna", max_output_tokens=200
    )
    answer = raw.parse()

    assert answer.output_text == "Ik heb je nieuwe adres genoteerd."
    assert [item.type for item in answer.output] == ["message"]
    assert (answer.status, answer.instructions, answer.id) == ("completed", "Antwoord kort.", raw.headers["X-Core-Response-Id"])
    assert system_text(model.requests[0]).startswith("Antwoord kort.")
    assert model.requests[0].body["max_tokens"] == 200
    assert_memory_injected_and_written(app, model, "Anna heeft een nieuw adres.")
    conforms(OpenAIResponse, json.loads(raw.content))
    assert client(app).responses.retrieve(answer.id).output_text == "Ik heb je nieuwe adres genoteerd."


def test_responses_stream_gives_the_typed_events_the_sdk_expects(app, model):
    """Issue 21 (2): `responses.stream()` from created to completed, text deltas in between."""
    model.answer(write_call(app, "Anna reist in mei."))
    model.reply("Fijne reis in mei!")

    with client(app).responses.stream(model="fake-chat", input="Ik ga in mei op reis.", user="anna") as stream:
        events = list(stream)
        final = stream.get_final_response()

    types = [event.type for event in events]
    assert types == [
        "response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
        "response.output_text.delta", "response.output_text.done", "response.content_part.done",
        "response.output_item.done", "response.completed",
    ]
    assert "".join(event.delta for event in events if event.type == "response.output_text.delta") == "Fijne reis in mei!"
    assert final.output_text == "Fijne reis in mei!"
    conforms(OpenAIResponse, final.model_dump(mode="json"))
    assert_memory_injected_and_written(app, model, "Anna reist in mei.")


def test_previous_response_id_continues_the_core_thread(app, model):
    """Issue 21 (2): the second turn is on the first's thread; the model reads the first exchange."""
    model.reply("Genoteerd.")
    model.answer(write_call(app, "Anna's kat heet Minoes."))
    model.reply("Je kat heet Minoes.")
    sdk = client(app)

    first = sdk.responses.create(model="fake-chat", input="Mijn kat heet Minoes.", user="anna")
    second = sdk.responses.create(model="fake-chat", input="Hoe heet mijn kat?", previous_response_id=first.id, user="anna")

    assert second.output_text == "Je kat heet Minoes."
    assert second.previous_response_id == first.id
    thread = Response.objects.get(pk=first.id).thread_id
    assert Response.objects.get(pk=second.id).thread_id == thread
    assert first.model_extra["core"]["thread_id"] == second.model_extra["core"]["thread_id"] == thread
    conversation = [(message["role"], message.get("content")) for message in model.requests[1].body["messages"] if message["role"] != "system"]
    assert conversation == [("user", "Mijn kat heet Minoes."), ("assistant", "Genoteerd."), ("user", "Hoe heet mijn kat?")]
    assert ANNA_RECORD in system_text(model.requests[1])
    assert ("anna", "preference", "Anna's kat heet Minoes.", "tool") in app.records()


def test_a_function_tool_round_trips_through_responses(app, model):
    """Issue 21 (2): a `function_call` item out, its `function_call_output` in with
    previous_response_id, the model answers from it."""
    tools = [{"type": "function", "name": "lookup_order", "description": "An order's state",
              "parameters": {"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]}}]
    model.answer(completion(tool_calls=[("call_order", "lookup_order", {"order": "A-17"})]))
    model.answer(write_call(app, "Anna wacht op bestelling A-17."))
    model.reply("Je bestelling A-17 is onderweg.")
    sdk = client(app)

    first = sdk.responses.create(model="fake-chat", input="Waar is bestelling A-17?", tools=tools, user="anna")
    call = first.output[0]
    second = sdk.responses.create(
        model="fake-chat", previous_response_id=first.id, tools=tools, user="anna",
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "onderweg"}],
    )

    assert (call.type, call.name, json.loads(call.arguments)) == ("function_call", "lookup_order", {"order": "A-17"})
    assert first.status == "completed"
    assert second.output_text == "Je bestelling A-17 is onderweg."
    messages = model.requests[1].body["messages"]
    assert messages[-2]["tool_calls"][0]["function"]["name"] == "lookup_order"
    assert messages[-1] == {"role": "tool", "tool_call_id": "call_order", "content": "onderweg"}
    assert_memory_injected_and_written(app, model, "Anna wacht op bestelling A-17.")
    # The memory write of the second turn is on the thread and the trace, not in the caller's output.
    assert [item.type for item in second.output] == ["message"]
    kinds = Item.objects.filter(thread_id=second.model_extra["core"]["thread_id"]).values_list("kind", "name")
    assert ("tool_call", f"memory__{app.index.id}__write") in set(kinds)


def test_models_are_the_organisations_offered_models(app, model):
    """Issue 21 (3)."""
    app.organisation.offered_models = ["fake-chat"]
    app.organisation.save(update_fields=["offered_models"])
    sdk = client(app)

    assert [each.id for each in sdk.models.list()] == ["fake-chat"]
    assert sdk.models.retrieve("fake-chat").owned_by == "openai"
    with pytest.raises(openai.NotFoundError) as missing:
        sdk.models.retrieve("other-chat")
    assert missing.value.code == "model_not_found"


def test_errors_take_openais_shape_and_statuses(app, model, site):
    """Issue 21 (3): 401, 403, 404, 422→400 and 429 with Retry-After, each as the SDK's own error."""
    from tests.conftest import _tenant  # another organisation, its own key and index

    other = _tenant()
    messages = [{"role": "user", "content": "hallo"}]

    with pytest.raises(openai.AuthenticationError) as unauthenticated:
        openai.OpenAI(base_url=app.base_url, api_key="core_sk_unknown", max_retries=0).chat.completions.create(model="fake-chat", messages=messages)
    with pytest.raises(openai.BadRequestError) as unknown_model:
        client(app).chat.completions.create(model="absent", messages=messages)
    with pytest.raises(openai.BadRequestError) as bad_message:
        client(app).chat.completions.create(model="fake-chat", messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}])
    with pytest.raises(openai.PermissionDeniedError) as forbidden:
        _token_for_bob(app).responses.create(model="fake-chat", input="hoi", user="anna")
    mine = client(app).responses.create(model="fake-chat", input="hoi", user="anna")
    with pytest.raises(openai.NotFoundError) as elsewhere:
        openai.OpenAI(base_url=app.base_url, api_key=other.secret, max_retries=0).responses.retrieve(mine.id)
    with pytest.raises(openai.NotFoundError) as previous_elsewhere:
        openai.OpenAI(base_url=app.base_url, api_key=other.secret, max_retries=0).responses.create(model="fake-chat", input="hoi", previous_response_id=mine.id)

    assert (unauthenticated.value.status_code, unauthenticated.value.code) == (401, "invalid_api_key")
    assert (unknown_model.value.status_code, unknown_model.value.code, unknown_model.value.param) == (400, "model_not_found", "model")
    assert (bad_message.value.param, bad_message.value.code) == ("messages[0].content[0]", None)
    assert (forbidden.value.status_code, forbidden.value.param) == (403, "user")
    assert (elsewhere.value.status_code, previous_elsewhere.value.param) == (404, "previous_response_id")
    for error in (unauthenticated, unknown_model, bad_message, forbidden, elsewhere):
        assert set(error.value.body) == {"message", "type", "param", "code"}
    assert Response.objects.filter(organisation_id=other.organisation.id).count() == 0

    app.organisation.rate_limit_per_minute = 1
    app.organisation.save(update_fields=["rate_limit_per_minute"])
    with pytest.raises(openai.RateLimitError) as limited:
        for _ in range(3):
            client(app).models.list()
    assert int(limited.value.response.headers["Retry-After"]) >= 1
    assert limited.value.code == "rate_limit_exceeded"


def _token_for_bob(app) -> openai.OpenAI:
    from core_memory.keys.services import subject_token_create

    _token, secret = subject_token_create(caller=Caller(key=app.key, subject="bob"), ttl_seconds=600)
    return openai.OpenAI(base_url=app.base_url, api_key=secret, max_retries=0)


def test_a_failed_model_is_a_502_for_chat_and_a_failed_response_for_responses(app, model):
    """A model that fails is an error the SDK raises for Chat Completions, and a `failed` response
    (as OpenAI's own) for Responses; the turn is kept as failed either way, nothing is a 500."""
    model.fail(400, times=2)

    with pytest.raises(openai.APIStatusError) as failed:
        client(app).chat.completions.create(model="fake-chat", messages=[{"role": "user", "content": "hallo"}])
    answer = client(app).responses.create(model="fake-chat", input="hallo")

    assert (failed.value.status_code, failed.value.code) == (502, "model_error")
    assert (answer.status, answer.error.code) == ("failed", "server_error")
    assert list(Response.objects.filter(organisation_id=app.organisation.id).values_list("status", flat=True)) == ["failed", "failed"]
    assert Thread.objects.filter(organisation_id=app.organisation.id).count() == 2
