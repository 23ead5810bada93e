"""A conversation becomes memory: a thread written through `POST /v1/responses` is read by
`run_extraction`, and its records are found by search, injected into the next turn and
readable in history (SPEC §8, R-1.4, R-5.4, R-5.10, R-7.5)."""
import json
from datetime import timedelta

import pytest
from django.utils import timezone

from tests.extraction.builders import add, extraction_answer, switch_put

pytestmark = pytest.mark.django_db


def test_a_turns_thread_becomes_records_in_search_injection_and_history(tenant, fake_model, run_extraction):
    client, key = tenant.key_client(memory={"injection": {"enabled": True, "index_id": tenant.index.id}})
    switch_put(client, tenant.index.id)
    fake_model.reply("Fijn, dan stuur ik de facturen per e-mail.", usage=(20, 8))
    turn = client.post(
        "/v1/responses", {"model": "fake-chat", "user": "anna", "input": "Stuur mijn facturen voortaan per e-mail."}, format="json"
    ).json()
    assert turn["status"] == "completed"

    def extraction(request_body):
        user_item = shown_items(request_body)[0]
        return extraction_answer([add("Wil facturen per e-mail.", type="preference", item_ids=[user_item["id"]])])

    fake_model.respond(extraction, format_name="core_extraction")
    summary = run_extraction(now=timezone.now() + timedelta(minutes=31))

    assert summary["switches"][0]["written"] == 1
    found = client.post("/v1/memory/search", {"index_id": tenant.index.id, "query": "hoe wil ze haar facturen"}, format="json", HTTP_X_CORE_SUBJECT="anna").json()
    assert [hit["text"] for hit in found["data"]] == ["Wil facturen per e-mail."]
    hit = found["data"][0]
    assert (hit["subject"], hit["source"], hit["provenance"]["thread_id"], hit["provenance"]["response_id"]) == (
        "anna",
        "extraction",
        turn["thread_id"],
        turn["id"],
    )

    fake_model.reply("Komt goed.")
    client.post("/v1/responses", {"model": "fake-chat", "user": "anna", "input": "Wat weet je van mij?"}, format="json")
    block = fake_model.requests[-1].body["messages"][0]["content"]
    assert block == '[about_this_person]\n{"type":"preference","confidence":"90%","text":"Wil facturen per e-mail."}'

    history = client.get(f"/v1/memory/{hit['id']}/history").json()["data"]
    assert [(version["status"], version["source"]) for version in history] == [("active", "extraction")]


def shown_items(request_body) -> list[dict]:
    return json.loads(request_body["messages"][-1]["content"])["items"]
