"""The console's search box (core_memory.console.search, issue 32 item 5): a person, a record by its
words or id, a thread or a response by id — her organisation's only, and audited as the record list's
search is (R-10.2)."""
from __future__ import annotations

import pytest

from audit.models import AuditEvent
from core_memory.base.callers import Caller
from core_memory.threads.models import Response
from core_memory.threads.services import thread_create
from memory.services.writes import record_write
from tests.factories import console_client, resolved_for, staff_without_organisation, with_draft
from tests.memory.conftest import record_url

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_password_hashing")]

SEARCH = "/console/search/"


def found(response) -> dict[str, list[str]]:
    return {group["kind"]: [row["label"] for row in group["rows"]] for group in response.context["groups"]}


def test_it_finds_a_person_and_records_by_their_words_grouped_and_linked(console, tenant, other_tenant, write):
    koffie = write("Anna drinkt koffie zwart", subject="anna")
    write("Bert drinkt thee", subject="bert")
    thread_create(caller=Caller(key=other_tenant.key, subject="anna-elders"))

    by_words = console.get(SEARCH, {"q": "koffie"})
    by_person = console.get(SEARCH, {"q": "ann"})

    assert found(by_words) == {"records": [koffie.id]}
    page = by_words.content.decode()
    assert f'href="{record_url(koffie)}"' in page
    assert 'id="console-search-q"' in page and 'value="koffie"' in page  # the box keeps the words
    assert found(by_person) == {"persons": ["anna"]}
    assert f'href="/console/persons/person/{tenant.organisation.id}/anna/"' in by_person.content.decode()


def test_another_organisations_person_record_thread_and_response_never_show(console, tenant, other_tenant, write):
    """R-12.1: searched by their very words and ids."""
    other = Caller(key=other_tenant.key, subject="dirk")
    thread = thread_create(caller=other)
    index = resolved_for(other_tenant.key, other_tenant.index)
    record = record_write(caller=Caller(key=other_tenant.key, subject="dirk", actor="test"), index=index, **with_draft(type="fact", text="Dirk drinkt koffie")).record

    for term in ("dirk", "koffie", record.id, thread.id):
        response = console.get(SEARCH, {"q": term})
        assert response.status_code == 200
        assert found(response) == {}, term
        assert 'id="search-nothing"' in response.content.decode(), term


def test_a_thread_and_a_response_are_found_by_id_and_the_search_is_audited(console, tenant, write):
    koffie = write("Anna drinkt koffie", subject="anna")
    thread = thread_create(caller=Caller(key=tenant.key, subject="anna"))
    response_row = Response.objects.create(organisation_id=tenant.organisation.id, thread=thread, key_id=tenant.key.id, model="fake-chat")

    assert found(console.get(SEARCH, {"q": thread.id})) == {"threads": [thread.id]}
    by_response = console.get(SEARCH, {"q": response_row.id})
    assert found(by_response) == {"responses": [response_row.id]}
    assert f'#{response_row.id}"' in by_response.content.decode()
    console.get(SEARCH, {"q": "koffie"})

    events = AuditEvent.objects.filter(action="memory.console_read", details__page="search").order_by("id")
    assert [(event.actor, event.organisation_id, event.details["search"]) for event in events] == [
        ("console:anna", tenant.organisation.id, thread.id),
        ("console:anna", tenant.organisation.id, response_row.id),
        ("console:anna", tenant.organisation.id, "koffie"),
    ]
    assert (events[0].details["thread_ids"], events[1].details["response_ids"]) == ([thread.id], [response_row.id])
    assert events[2].details["record_ids"] == [koffie.id]


def test_who_administers_nothing_finds_nothing_and_an_empty_box_reads_nothing(console, write):
    write("Anna drinkt koffie", subject="anna")
    loose = console_client(staff_without_organisation(with_permissions=True))

    assert found(loose.get(SEARCH, {"q": "koffie"})) == {}
    assert console.get(SEARCH).status_code == 200
    assert not AuditEvent.objects.filter(action="memory.console_read", details__page="search").exists()
