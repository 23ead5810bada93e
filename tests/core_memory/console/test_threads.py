"""A thread in the console (core_memory.console.threads, issue 13 item 6): its items and, per response,
why the assistant knew what it knew — scoped and audited (R-10.2, R-12.1)."""
from __future__ import annotations

import json

import pytest
from django.contrib.admin.utils import quote
from django.utils import timezone

from audit.models import AuditEvent
from core_memory.base.callers import Caller
from core_memory.threads.models import Item, Response
from core_memory.threads.services import thread_create
from memory.models import MemoryRecord
from tests.core_memory.console.world import build_world, contest, response_of
from tests.factories import console_client, staff_without_organisation
from tests.memory.conftest import record_url

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_password_hashing")]


def thread_url(thread_id: str) -> str:
    return f"/console/threads/thread/{quote(thread_id)}/change/"


def test_the_thread_page_shows_each_responses_memory_trace_linked_to_the_records(console, tenant, fake_model):
    """R-7.9's counts, the records per section, those skipped and why, the tools and their results."""
    world = build_world(tenant, fake_model)
    detail = response_of(world).memory_detail

    response = console.get(thread_url(world.thread_id))

    assert response.status_code == 200
    (trace,) = response.context["traces"]
    dutch = {"commitments": "toezeggingen", "behaviour": "gedrag", "about_this_person": "over deze persoon", "organisation": "organisatie"}
    expected = {}
    for record_id, section in detail["injected"]:
        expected.setdefault(dutch[section], []).append(record_id)
    assert len(expected) >= 3  # the world's turn filled several sections
    assert trace.injected == list(expected.items())
    skipped = MemoryRecord.objects.get(text="x" * 300)
    assert (skipped.id, "over deze persoon", "paste niet in het tokenbudget") in trace.dropped
    (tool,) = trace.tools
    assert tool.name == f"memory__{tenant.index.id}__search"
    assert world.coffee.id in tool.record_ids
    page = response.content.decode()
    assert f'href="{record_url(world.coffee)}"' in page
    assert "Waarom wist de assistent dat?" in page
    assert trace.counts == response_of(world).trace["memory"]


def test_reading_a_thread_is_audited_with_every_record_it_showed(console, tenant, fake_model):
    """R-10.2."""
    world = build_world(tenant, fake_model)
    detail = response_of(world).memory_detail

    console.get(thread_url(world.thread_id))

    event = AuditEvent.objects.get(action="memory.console_read", details__page="thread")
    assert (event.actor, event.target) == ("console:anna", world.thread_id)
    shown = {record_id for record_id, _section in detail["injected"]} | {record_id for record_id, *_rest in detail["dropped"]}
    assert shown <= set(event.details["record_ids"])
    assert event.details["response_ids"] == [world.response_id]


def test_an_erased_record_shows_as_gone_not_as_an_error(console, tenant, fake_model):
    world = build_world(tenant, fake_model)
    MemoryRecord.objects.filter(pk=world.coffee.pk).delete()

    page = console.get(thread_url(world.thread_id)).content.decode()

    assert f"<span class=\"identifier\">{world.coffee.id}</span> <span class=\"badge-muted\">(gewist, of niet meer in de organisatie)</span>" in page


def test_another_organisations_thread_is_a_404_and_no_read(console, other_tenant):
    """R-2.5, R-12.1."""
    thread = thread_create(caller=Caller(key=other_tenant.key, subject="dirk"))

    assert console.get(thread_url(thread.id)).status_code == 404
    assert not AuditEvent.objects.filter(action="memory.console_read").exists()
    assert thread.id not in console.get("/console/threads/thread/").content.decode()


def test_who_administers_nothing_sees_no_thread(tenant):
    thread = thread_create(caller=Caller(key=tenant.key, subject="anna"))
    client = console_client(staff_without_organisation(with_permissions=True))

    assert client.get(thread_url(thread.id)).status_code == 404
    assert client.get("/console/threads/thread/").status_code == 403
    assert not AuditEvent.objects.filter(action="memory.console_read").exists()


def test_a_tool_of_an_index_deleted_since_shows_nothing_of_what_it_read(console, tenant, fake_model):
    """Issue 19: the page showed a search result's record text after its index was gone; the
    tool call and result are there, their content is not."""
    from stores.services import index_delete

    world = build_world(tenant, fake_model)
    assert world.coffee.text in console.get(thread_url(world.thread_id)).content.decode()
    index_delete(caller=Caller.system(organisation_id=tenant.index.organisation_id, actor="test"), index=tenant.index)

    response = console.get(thread_url(world.thread_id))

    assert response.status_code == 200
    assert world.coffee.text not in response.content.decode()
    (tool,) = response.context["traces"][0].tools
    assert (tool.arguments, tool.result, tool.record_ids) == ("—", None, [])


def test_the_thread_list_shows_person_agents_last_message_and_finds_by_person_and_words(console, tenant, fake_model):
    """Issue 24: threads by person and content, not by exact id alone; the search is in the list's audited read."""
    world = build_world(tenant, fake_model)
    thread_create(caller=Caller(key=tenant.key, subject="bert"))

    listed = console.get("/console/threads/thread/")
    by_person = console.get("/console/threads/thread/", {"q": "ann"})
    by_words = console.get("/console/threads/thread/", {"q": "koffie zwart"})

    page = listed.content.decode()
    assert "Anna drinkt haar koffie zwart." in page  # the last message, previewed
    assert [thread.id for thread in by_person.context["cl"].result_list] == [world.thread_id]
    assert [thread.id for thread in by_words.context["cl"].result_list] == [world.thread_id]
    searched = AuditEvent.objects.filter(action="memory.console_read", details__page="threads").values_list("details__search", flat=True)
    assert "koffie zwart" in list(searched)


def test_the_trace_shows_each_record_as_the_response_saw_it_with_todays_state_beside_it(console, tenant, fake_model, write):
    """Issue 24: a record contested after the turn shows as the model saw it — not contested —
    and, marked as today's, contested now."""
    world = build_world(tenant, fake_model)
    injected = [record_id for record_id, _section in response_of(world).memory_detail["injected"]]
    calm = next(record for record in MemoryRecord.objects.filter(pk__in=injected).order_by("id") if not record.contested)
    contest(calm, write("Het tegendeel", subject=calm.subject))

    page = console.get(thread_url(world.thread_id)).content.decode()

    line = page[page.index(f">{calm.id}</a>"):]
    line = line[: line.index("</li>")]
    assert "then-contested" not in line
    assert '<span class="badge-then">vandaag</span> <span class="badge-contested">betwist</span>' in line


def test_the_thread_reads_as_a_conversation_the_injected_set_once_then_what_changed(console, tenant, write):
    """Issue 32: the first response that injected lists its records; each later one only the records
    added and those no longer injected since the one before (and says when nothing changed)."""
    koffie, thee, jazz, delft = (write(text, subject="anna") for text in ("Anna drinkt koffie", "Anna drinkt thee", "Anna houdt van jazz", "Anna woont in Delft"))
    thread = thread_create(caller=Caller(key=tenant.key, subject="anna"))

    def turn(*injected):
        detail = {"injected": [[record.id, section] for record, section in injected], "dropped": []}
        return Response.objects.create(organisation_id=tenant.organisation.id, thread=thread, key_id=tenant.key.id, model="fake-chat", memory_detail=detail)

    first = turn((koffie, "about_this_person"), (thee, "about_this_person"), (delft, "about_this_person"))
    second = turn((koffie, "about_this_person"), (delft, "about_this_person"), (jazz, "behaviour"))
    third = turn((koffie, "about_this_person"), (delft, "about_this_person"), (jazz, "behaviour"))

    response = console.get(thread_url(thread.id))

    traces = response.context["traces"]
    assert traces[0].previous_id is None and [ids for _section, ids in traces[0].injected] == [[koffie.id, thee.id, delft.id]]
    assert (traces[1].previous_id, traces[1].added, traces[1].gone, traces[1].kept) == (first.id, [("gedrag", [jazz.id])], [thee.id], 2)
    assert (traces[2].previous_id, traces[2].added, traces[2].gone, traces[2].kept) == (second.id, [], [], 3)
    page = response.content.decode()
    assert page.count(f'href="{record_url(delft)}"') == 1  # shown once, on the first response
    assert "Nu geïnjecteerd, niet in het vorige antwoord" in page and "Niet meer geïnjecteerd" in page
    assert "3 records geïnjecteerd zoals in het vorige antwoord" in page and "niets veranderd" in page
    assert third.id in page


def test_tool_results_on_the_thread_page_are_in_the_organisations_zone(console, tenant):
    tenant.organisation.timezone = "Europe/Amsterdam"
    tenant.organisation.save(update_fields=["timezone"])
    thread = thread_create(caller=Caller(key=tenant.key, subject="anna"))
    turn = Response.objects.create(organisation_id=tenant.organisation.id, thread=thread, key_id=tenant.key.id, model="fake-chat")
    moment = {"created_at": "2026-07-01T10:00:00Z"}
    for position, (kind, content) in enumerate([(Item.Kind.TOOL_CALL, json.dumps(moment)), (Item.Kind.TOOL_RESULT, json.dumps(moment))]):
        Item.objects.create(
            thread=thread, position=position + 1, role=Item.Role.TOOL, kind=kind, name="lookup", call_id="call_1", content=content,
            response_id=turn.id, created_at=timezone.now(),
        )

    page = console.get(thread_url(thread.id)).content.decode()

    assert "2026-07-01T12:00:00+02:00" in page
    assert "2026-07-01T10:00:00Z" not in page and "10:00:00+00:00" not in page
