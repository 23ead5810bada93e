"""A turn for a key with `pii_redaction` (core_memory.flows.turns.redaction, R-8.8): the
conversation's model sees placeholders in everything it reads; the person, the thread and
the records see real values."""
import json

import phonenumbers
import pytest

from core_memory.base.callers import Caller
from core_memory.pii.models import ThreadPlaceholders
from core_memory.threads.models import Item, Response, Thread
from memory.models import MemoryRecord
from memory.services.writes import RecordDraft, record_write
from memory.tools.catalogue import TRUST_ENVELOPE_NOTE
from tests.core_memory.pii.labelled import bare, writings_with_personal_data
from tests.factories import resolved_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def redacting(tenant):
    """A client of a redacting key with the write tool and a memory block, for the person anna."""
    client, key = tenant.key_client(
        subject="anna",
        pii_redaction=True,
        memory={"write_tool": True, "injection": {"enabled": True, "index_id": tenant.index.id}},
    )
    return client, key


def turn(client, **body):
    return client.post("/v1/responses", {"model": "fake-chat", **body}, format="json").json()


def stored_contents(thread_id: str) -> list:
    return [item.content for item in Item.objects.filter(thread_id=thread_id).order_by("position")]


def test_the_model_sees_placeholders_and_the_person_and_the_thread_see_real_values(tenant, fake_model, redacting):
    """R-8.8: input, instructions and answer."""
    client, _ = redacting
    fake_model.reply("Genoteerd: ik mail <EMAIL_1> en bel <phone_1> als het niet lukt.")

    body = turn(client, input="Mail me op anna@example.nl of bel 06-12345678.", instructions="Support: support@acme.nl")

    assert fake_model.requests[0].body["messages"] == [
        {"role": "system", "content": "Support: <EMAIL_1>"},
        {"role": "user", "content": "Mail me op <EMAIL_2> of bel <PHONE_1>."},
    ]
    answer = "Genoteerd: ik mail support@acme.nl en bel 06-12345678 als het niet lukt."
    assert body["status"] == "completed"
    assert [item["content"] for item in body["output"]] == [answer]
    assert stored_contents(body["thread_id"]) == ["Mail me op anna@example.nl of bel 06-12345678.", answer]


def test_personal_data_in_any_writing_reaches_the_model_only_as_placeholders(tenant, fake_model, redacting):
    """Issue 19 (R-8.8): an IBAN with no-break spaces, tabs, dots or a line break, an e-mail
    address with a zero-width space or an internationalised domain, a card number with no-break
    spaces, a dashed BSN reached the model raw; the thread keeps what she wrote."""
    client, _ = redacting
    text, values = writings_with_personal_data()
    fake_model.reply("Genoteerd.")

    body = turn(client, input=text)

    seen = fake_model.requests[0].body["messages"][-1]["content"]
    assert [value for value in values if bare(value) in bare(seen)] == []
    assert seen.count("<") == len(values)
    assert stored_contents(body["thread_id"])[0] == text


def test_the_memory_block_reaches_the_model_with_placeholders(tenant, fake_model, redacting):
    """R-8.8: the memory block is redacted with the thread's numbering."""
    client, key = redacting
    record_write(caller=Caller(key=key, subject="anna", actor="t"), index=resolved_for(key, tenant.index), draft=RecordDraft(type="fact", text="IBAN van Anna: NL91ABNA0417164300"))

    turn(client, input="Naar welk rekeningnummer, NL91 ABNA 0417 1643 00?")

    system, user = fake_model.requests[0].body["messages"]
    assert system["content"] == '[about_this_person]\n{"type":"fact","confidence":"100%","text":"IBAN van Anna: <IBAN_1>"}'
    assert user["content"] == "Naar welk rekeningnummer, <IBAN_1>?"


def test_the_write_tool_gets_real_values_and_the_model_sees_its_result_with_placeholders(tenant, fake_model, redacting):
    """R-8.8: a record written by the memory tool holds the real values; tool calls and
    results on the thread are real; what goes back to the model carries placeholders."""
    client, _ = redacting
    tool = f"memory__{tenant.index.id}__write"
    fake_model.reply(tool_calls=[("call_w", tool, {"type": "preference", "text": "Wil gebeld worden op <PHONE_1>, niet op <EMAIL_1>."})])
    fake_model.reply("Staat genoteerd.")

    body = turn(client, input="Bel me op 06-12345678, mail anna@example.nl liever niet.", tools=[{"type": "tool", "name": tool}])

    record = MemoryRecord.objects.get(index=tenant.index)
    assert (record.subject, record.text) == ("anna", "Wil gebeld worden op 06-12345678, niet op anna@example.nl.")
    call_item, result_item = Item.objects.filter(thread_id=body["thread_id"], kind__in=["tool_call", "tool_result"]).order_by("position")
    assert json.loads(call_item.content) == {"type": "preference", "text": "Wil gebeld worden op 06-12345678, niet op anna@example.nl."}
    assert json.loads(result_item.content)["text"] == "Wil gebeld worden op 06-12345678, niet op anna@example.nl."
    assistant, tool_message = fake_model.requests[1].body["messages"][-2:]
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {
        "type": "preference", "text": "Wil gebeld worden op <PHONE_1>, niet op <EMAIL_1>."
    }
    tool_result = json.loads(tool_message["content"].removeprefix(f"{TRUST_ENVELOPE_NOTE}\n"))
    assert tool_result["text"] == "Wil gebeld worden op <PHONE_1>, niet op <EMAIL_1>."
    assert "06-12345678" not in json.dumps(fake_model.requests[1].body)
    assert "anna@example.nl" not in json.dumps(fake_model.requests[1].body)


def test_a_search_result_reaches_the_model_with_placeholders(tenant, fake_model, redacting):
    client, key = redacting
    tool = f"memory__{tenant.index.id}__search"
    record_write(caller=Caller(key=key, subject="anna", actor="t"), index=resolved_for(key, tenant.index), draft=RecordDraft(type="fact", text="Anna's site is annasmit.dev"))
    fake_model.reply(tool_calls=[("call_s", tool, {"query": "site"})])
    fake_model.reply("Je site is <URL_1>.")

    body = turn(client, input="Wat is mijn site?", tools=[{"type": "tool", "name": tool}])

    tool_message = fake_model.requests[1].body["messages"][-1]
    hits = json.loads(tool_message["content"].removeprefix(f"{TRUST_ENVELOPE_NOTE}\n"))["content"]["hits"]
    assert [hit["text"] for hit in hits] == ["Anna's site is <URL_1>"]
    assert body["output"][-1]["content"] == "Je site is annasmit.dev."


def test_placeholders_are_numbered_alike_on_every_turn_of_a_thread(tenant, fake_model, redacting):
    """R-8.8: the same value, the same placeholder on every turn; a new value, the next number."""
    client, _ = redacting
    first = turn(client, input="Mijn mail is anna@example.nl.")

    turn(client, thread_id=first["thread_id"], input="Of anna.smit@werk.nl, en anna@example.nl blijft.")

    assert fake_model.requests[1].body["messages"] == [
        {"role": "user", "content": "Mijn mail is <EMAIL_1>."},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "Of <EMAIL_2>, en <EMAIL_1> blijft."},
    ]
    assert ThreadPlaceholders.objects.get(thread_id=first["thread_id"]).values == {
        "<EMAIL_1>": "anna@example.nl", "<EMAIL_2>": "anna.smit@werk.nl"
    }
    assert Thread.objects.get(pk=first["thread_id"]).redacting_key_wrote_at is not None


def test_a_key_without_redaction_sends_real_values_and_stores_no_placeholders(tenant, fake_model):
    client, _ = tenant.key_client(subject="anna")

    turn(client, input="Mail me op anna@example.nl.")

    assert fake_model.requests[0].body["messages"] == [{"role": "user", "content": "Mail me op anna@example.nl."}]
    assert not ThreadPlaceholders.objects.exists()


def test_a_streamed_turn_shows_the_person_real_values(tenant, fake_model, redacting):
    client, _ = redacting
    fake_model.reply("Ik bel <PHONE_1>.")

    response = client.post("/v1/responses", {"model": "fake-chat", "input": "Bel 06-12345678", "stream": True}, format="json")

    streamed = b"".join(response.streaming_content).decode()
    assert "Ik bel 06-12345678." in streamed
    assert "<PHONE_1>" not in streamed


def test_when_redaction_fails_the_turn_fails_and_nothing_reaches_the_model(tenant, fake_model, redacting, monkeypatch):
    """R-8.8: `pii_redaction_failed`."""
    client, _ = redacting
    monkeypatch.setattr(phonenumbers, "PhoneNumberMatcher", lambda *args, **kwargs: 1 / 0)

    body = turn(client, input="Bel 06-12345678")

    assert body["status"] == "failed"
    assert body["error"] == {
        "code": "pii_redaction_failed", "message": "Personal data could not be redacted; nothing was sent to the model."
    }
    assert fake_model.requests == []
    assert Response.objects.get(pk=body["id"]).model_calls == 0
