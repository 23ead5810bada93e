"""Background calls with a fixed answer shape (core_memory.llm.structured, SPEC §13)."""
import json

import pytest

from core_memory.llm.models import TokenUsage
from core_memory.llm.protocol import ProviderError, TokenCount
from core_memory.llm.structured import (
    InvalidModelOutput,
    answer_objects,
    answer_strings,
    answer_value,
    nullable,
    strict_object,
    structured_completion,
)
from tests.fake_model import completion

pytestmark = pytest.mark.django_db

SCHEMA = strict_object({"lesson": {"type": "string"}, "why": nullable({"type": "string", "enum": ["a", "b"]})})


def ask(tenant):
    return structured_completion(
        organisation=tenant.organisation, model="fake-chat", name="core_store_lesson", schema=SCHEMA, messages=[{"role": "user", "content": "?"}]
    )


def test_strict_objects_require_every_property_and_allow_no_other():
    """R-13: what OpenAI's strict mode accepts; optional values are nullable."""
    assert SCHEMA == {
        "type": "object",
        "properties": {"lesson": {"type": "string"}, "why": {"type": ["string", "null"], "enum": ["a", "b", None]}},
        "required": ["lesson", "why"],
        "additionalProperties": False,
    }


def test_the_call_sends_a_strict_json_schema_and_reads_the_content_as_json(tenant, fake_model):
    """R-13: `response_format` json_schema with name and strict; `choices[0].message.content` as JSON; metered."""
    fake_model.reply(json.dumps({"lesson": "Vraag eerst.", "why": None}), usage=(30, 4))

    answer = ask(tenant)

    assert (answer.data, answer.usage) == ({"lesson": "Vraag eerst.", "why": None}, TokenCount(30, 4, 34))
    assert fake_model.requests[0].body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "core_store_lesson", "schema": SCHEMA, "strict": True},
    }
    assert TokenUsage.objects.get().total_tokens == 34


@pytest.mark.parametrize(
    "answer",
    [
        completion("Eén korte zin."),
        completion("[1, 2]"),
        completion('"a string"'),
        completion(None, tool_calls=[("c1", "anything", {})]),
        completion("[" * 100_000 + "]" * 100_000),
    ],
    ids=["prose", "a list", "a string", "a tool call", "too deep"],
)
def test_an_answer_that_is_not_a_json_object_is_invalid_model_output_and_still_metered(tenant, fake_model, answer):
    fake_model.answer(answer)

    with pytest.raises(InvalidModelOutput) as raised:
        ask(tenant)

    assert raised.value.code == "invalid_model_output"
    assert raised.value.usage == TokenCount(10, 5, 15)
    assert TokenUsage.objects.get().calls == 1


def test_a_model_that_gives_no_answer_is_a_provider_error(tenant, fake_model):
    fake_model.fail(400)

    with pytest.raises(ProviderError) as raised:
        ask(tenant)

    assert not isinstance(raised.value, InvalidModelOutput)
    assert raised.value.code == "model_error"


def test_the_readers_name_the_path_of_what_is_wrong():
    data = {"records": [{"op": "add", "text": "x\u0000", "confidence": True, "item_ids": ["a", 2]}, "b"]}
    record = data["records"][0]

    assert answer_value({}, "why", "string", path="", required=False) is None
    with pytest.raises(InvalidModelOutput, match=r"^records\[0\]\.text holds characters that cannot be stored\.$"):
        answer_value(record, "text", "string", path="records[0]")
    with pytest.raises(InvalidModelOutput, match=r"^records\[0\]\.confidence is not a number\.$"):
        answer_value(record, "confidence", "number", path="records[0]")
    with pytest.raises(InvalidModelOutput, match=r"^records\[0\]\.op is not one of add\.$"):
        answer_value({"op": "remove"}, "op", "string", path="records[0]", choices=("add",))
    with pytest.raises(InvalidModelOutput, match=r"^records\[0\]\.lesson is missing\.$"):
        answer_value({}, "lesson", "string", path="records[0]")
    with pytest.raises(InvalidModelOutput, match=r"^records\[1\] is not an object\.$"):
        answer_objects(data, "records")
    with pytest.raises(InvalidModelOutput, match=r"^records\[0\]\.item_ids\[1\] is not a string\.$"):
        answer_strings(record, "item_ids", path="records[0]")
