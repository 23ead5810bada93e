"""What Core adds holds on the OpenAI-compatible surface as on `/v1/responses` (issue 21): personal
data redaction for a `pii_redaction` key, and `Idempotency-Key` retries, both through the
official SDK against gunicorn."""
from __future__ import annotations

import pytest

from core_memory.threads.models import Item, Response
from tests.core_memory.openai_compat.conftest import make_app
from tests.core_memory.openai_compat.test_sdk import client

# A gunicorn starting on a busy machine takes its time.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(600)]


def test_a_redacting_keys_model_sees_placeholders_and_the_app_real_values(site, model):
    """R-8.8 here: the model reads `<EMAIL_1>`, the app gets the address, the thread keeps it."""
    app = make_app(site, pii_redaction=True)
    model.reply("Ik mail de factuur naar <EMAIL_1>.")

    answer = client(app).chat.completions.create(
        model="fake-chat", messages=[{"role": "user", "content": "Mail de factuur naar anna@example.nl"}], user="anna"
    )

    sent = str(model.requests[0].body["messages"])
    assert "anna@example.nl" not in sent and "<EMAIL_1>" in sent
    assert answer.choices[0].message.content == "Ik mail de factuur naar anna@example.nl."
    stored = Item.objects.filter(response_id=answer.id).order_by("position").values_list("content", flat=True)
    assert list(stored) == ["Mail de factuur naar anna@example.nl", "Ik mail de factuur naar anna@example.nl."]


def test_a_retry_with_the_same_idempotency_key_answers_the_first_turn_again(app, model):
    """R-2.6 here: the SDK's retry of one request runs one turn."""
    model.reply("Eén keer.")
    sdk = client(app)
    ask = {"model": "fake-chat", "messages": [{"role": "user", "content": "Doe het één keer."}], "extra_headers": {"Idempotency-Key": "app-retry-1"}}

    first = sdk.chat.completions.with_raw_response.create(**ask)
    again = sdk.chat.completions.with_raw_response.create(**ask)

    assert first.parse().id == again.parse().id
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.parse().choices[0].message.content == "Eén keer."
    assert (len(model.requests), Response.objects.filter(organisation_id=app.organisation.id).count()) == (1, 1)


def test_system_messages_are_the_turns_instructions_and_never_stored(app, model):
    """A system message anywhere in a chat or a Responses input instructs only its own turn: it
    reaches the model before the memory block and is not kept on the thread."""
    model.reply("Goed.")
    model.reply("Prima.")
    sdk = client(app)

    chat = sdk.chat.completions.create(model="fake-chat", user="anna", messages=[
        {"role": "system", "content": "Wees beleefd."}, {"role": "user", "content": "Hoi"},
        {"role": "developer", "content": "Antwoord in één woord."},
    ])
    turn = sdk.responses.create(model="fake-chat", user="anna", instructions="Kort.",
                                input=[{"role": "developer", "content": "Zeg prima."}, {"role": "user", "content": "Hoe gaat het?"}])

    first, second = (request.body["messages"] for request in model.requests)
    assert [message["role"] for message in first] == ["system", "system", "user"]
    assert first[0]["content"] == "Wees beleefd.\n\nAntwoord in één woord."
    assert second[0]["content"] == "Kort.\n\nZeg prima."
    roles = Item.objects.filter(response_id__in=[chat.id, turn.id]).values_list("role", flat=True)
    assert Item.Role.SYSTEM not in set(roles)
