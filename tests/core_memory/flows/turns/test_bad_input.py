"""The turn, thread and agent routes refuse what PostgreSQL cannot store with a 400 naming
the field, never a 500, and write nothing (R-12.3). Raw JSON: a test client would not
encode a NUL, a lone surrogate or an infinity the way a careless caller sends them."""
from __future__ import annotations

import pytest

from core_memory.agents.models import Agent
from core_memory.flows.turns.models import Response
from core_memory.threads.models import Item, Thread

pytestmark = pytest.mark.django_db


def written(organisation) -> tuple[int, int, int, int]:
    return (
        Thread.objects.filter(organisation=organisation).count(),
        Item.objects.filter(thread__organisation=organisation).count(),
        Response.objects.filter(organisation=organisation).count(),
        Agent.objects.filter(organisation=organisation).count(),
    )


@pytest.mark.parametrize(
    ("path", "body", "param"),
    [
        ("/v1/responses", '{"model": "fake-chat", "input": "a\\u0000b"}', "input"),
        ("/v1/responses", '{"model": "fake-chat", "input": [{"role": "user", "content": "\\ud800"}]}', "input[0].content"),
        ("/v1/responses", '{"model": "fake-chat", "input": [{"role": "user", "content": [{"type": "input_text", "text": "\\u0000"}]}]}', "input[0].content[0].text"),
        ("/v1/threads", '{"metadata": {"kanaal": "\\u0000"}}', "metadata.kanaal"),
        ("/v1/threads", '{"metadata": {"score": 1e999}}', "metadata.score"),
        ("/v1/threads/{thread}/items", '{"items": [{"role": "user", "content": {"tekst": ["\\ud800"]}}]}', "items[0].content.tekst[0]"),
        ("/v1/threads/{thread}/items", '{"items": [{"role": "user", "content": "goed"}, {"role": "user", "content": "\\u0000"}]}', "items[1].content"),
        ("/v1/agents", '{"name": "desk", "model": "fake-chat", "instructions": "\\u0000"}', "instructions"),
        # Nested deeper than the JSON encoder follows when storing it.
        ("/v1/threads", '{"metadata": {"a": ' + "[" * 900 + "]" * 900 + "}}", "metadata.a" + "[0]" * 32),
        ("/v1/threads/{thread}/items", '{"items": [{"role": "user", "content": ' + "[" * 900 + "]" * 900 + "}]}", "items[0].content" + "[0]" * 33),
    ],
)
def test_an_unstorable_value_is_a_400_naming_it_and_nothing_is_written(tenant, fake_model, path, body, param):
    """R-12.3, R-2.3."""
    client = tenant.client()
    thread = Thread.objects.create(organisation=tenant.organisation, key=tenant.key)
    before = written(tenant.organisation)

    response = client.generic("POST", path.format(thread=thread.id), body, content_type="application/json")

    assert (response.status_code, response.json()["error"]["param"]) == (400, param)
    assert written(tenant.organisation) == before
    assert fake_model.requests == []
