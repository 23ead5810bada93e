"""Issue 32, item 3 and 4: the console speaks the reader's language — every audit action by a
label in Dutch and English, settings' defaults in the page's language, capabilities by name —
answers an unknown object with its own 404, and shows tool results in the organisation's zone;
the audit log filters by several actions, leaves some out, leaves out the viewer's own reads,
and links a target while it exists."""
from __future__ import annotations

import re
from datetime import datetime, timezone as dt_timezone
from pathlib import Path

import pytest
from django.contrib.admin.utils import quote
from django.utils import timezone, translation

from audit.labels import ACTION_LABELS
from audit.services import audit_event_record
from core_memory.base.callers import Caller
from core_memory.console.services import console_administrator_create
from core_memory.console.threads import ThreadAdmin
from core_memory.threads.models import Item
from tests.factories import CONSOLE_PASSWORD, console_client

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_password_hashing")]

ROOT = Path(__file__).resolve().parents[3]
PRODUCTION = ("audit", "core_memory", "extraction", "maintenance", "memory", "stores")
ACTION_WRITTEN = re.compile(r'action="([a-z_]+\.[a-z_]+)"|\bif \w+ else "([a-z_]+\.[a-z_]+)"|^[A-Z_]+ = "([a-z_]+\.[a-z_]+)"', re.MULTILINE)


def actions_written() -> set[str]:
    """Every audit action the production code writes, read from its source."""
    found: set[str] = set()
    for package in PRODUCTION:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            for match in ACTION_WRITTEN.finditer(path.read_text()):
                found.update(group for group in match.groups() if group)
    return {action for action in found if action.split(".")[0] in {label.split(".")[0] for label in ACTION_LABELS}}


def test_every_audit_action_has_a_label_in_dutch_and_in_english():
    """Issue 32: the log shows "gelezen in de console", never `memory.console_read`."""
    written = actions_written()
    assert {"memory.console_read", "person.erased", "proposal.rejected", "memory.expired", "webhook.paused"} <= written
    assert written - set(ACTION_LABELS) == set()
    for action, label in ACTION_LABELS.items():
        with translation.override("en"):
            english = str(label)
        with translation.override("nl"):
            dutch = str(label)
        assert english != action and dutch != english, action


def test_the_audit_log_shows_labels_and_filters_by_several_actions_and_leaves_some_out(console, tenant):
    organisation_id = tenant.organisation.id
    created = audit_event_record(caller=Caller.system(organisation_id=organisation_id, actor=tenant.key.id), action="key.created", target="key_x")
    revoked = audit_event_record(caller=Caller.system(organisation_id=organisation_id, actor=tenant.key.id), action="key.revoked", target="key_x")
    audit_event_record(caller=Caller.system(organisation_id=organisation_id, actor=tenant.key.id), action="index.created", target="idx_x")

    several = console.get("/console/audit/auditevent/", {"action": ["key.created", "key.revoked"]})
    left_out = console.get("/console/audit/auditevent/", {"leave_out": ["index.created", "key.created"]})

    assert {event.action for event in several.context["cl"].result_list} == {"key.created", "key.revoked"}
    assert {created.id, revoked.id} <= {event.id for event in several.context["cl"].result_list}
    assert {event.action for event in left_out.context["cl"].result_list} == {"key.revoked"}
    page = several.content.decode()
    assert "sleutel aangemaakt" in page and "sleutel ingetrokken" in page and ">key.created<" not in page
    assert 'name="action" value="key.created" aria-label="alleen sleutel aangemaakt" checked' in page


def test_the_audit_log_leaves_out_the_viewers_own_reads_when_asked_and_the_home_tile_counts_only_others(console, tenant):
    """Issue 32: 158 events from her own browsing drowned the log; "reads today" counted them."""
    console.get("/console/memory/memoryrecord/")  # her own read
    bert = console_administrator_create(organisation=tenant.organisation, username="bert", password=CONSOLE_PASSWORD).user
    console_client(bert).get("/console/memory/memoryrecord/")

    others = console.get("/console/audit/auditevent/", {"action": "memory.console_read", "reads": "not_mine"})
    none = console.get("/console/audit/auditevent/", {"reads": "none"})
    home = console.get("/console/")

    assert [event.actor for event in others.context["cl"].result_list] == ["console:bert"]
    assert all(event.action != "memory.console_read" for event in none.context["cl"].result_list)
    assert home.context["dashboard"].reads_today == 1
    assert "reads=not_mine" in home.content.decode()


def test_a_target_is_a_link_while_its_object_exists_and_plain_once_it_is_gone(console, tenant, write):
    record = write("Anna drinkt koffie", subject="anna")
    audit_event_record(caller=Caller(key=tenant.key), action="memory.updated", target=record.id)
    audit_event_record(caller=Caller(key=tenant.key), action="memory.updated", target="mem_gone")
    audit_event_record(caller=Caller(key=tenant.key), action="person.updated", target="anna")

    page = console.get("/console/audit/auditevent/").content.decode()

    assert f'<a href="/console/memory/memoryrecord/{quote(record.id)}/change/"><span class="identifier">{record.id}</span></a>' in page
    assert f'<a href="/console/persons/person/{tenant.organisation.id}/anna/"><span class="identifier">anna</span></a>' in page
    assert '<span class="identifier">mem_gone</span>' in page and "mem_gone/change/" not in page


@pytest.mark.parametrize(("language", "words"), [("nl", "bestaat niet (meer)"), ("en", "does not exist (any more)")])
def test_an_unknown_record_or_person_is_the_consoles_404_in_its_language(console, tenant, language, words):
    """Issue 32: a bare English "Not Found" outside the console; an unknown person was an empty 200."""
    console.cookies["django_language"] = language

    record = console.get("/console/memory/memoryrecord/mem_00000000000000000000000000/change/")
    person = console.get(f"/console/persons/person/{tenant.organisation.id}/nobody-at-all/")

    for response in (record, person):
        page = response.content.decode()
        assert response.status_code == 404
        assert words in page and 'id="language-switch"' in page and f'lang="{language}"' in page


def test_an_english_page_shows_the_settings_defaults_in_english(console, tenant):
    """Issue 32: "Default: geen / uit / aan / leeg" on English pages."""
    console.get(f"/console/keys/apikey/{quote(tenant.key.id)}/change/")  # the fields built in Dutch first
    console.cookies["django_language"] = "en"

    page = console.get(f"/console/keys/apikey/{quote(tenant.key.id)}/change/").content.decode()

    assert "Default: off." in page and "Default: uit." not in page and "Default: geen." not in page
    assert "management: organisation, keys and audit log" in page


def test_tool_results_show_their_moments_in_the_organisations_zone():
    """Issue 32: the thread page showed a tool's times in UTC beside every other time in the zone."""
    moment = datetime(2026, 12, 6, 9, 30, tzinfo=dt_timezone.utc).isoformat().replace("+00:00", "Z")
    items = [
        Item(kind=Item.Kind.TOOL_CALL, call_id="call_1", name="memory_search", content='{"after": "2026-12-01T00:00:00+00:00"}'),
        Item(kind=Item.Kind.TOOL_RESULT, call_id="call_1", content=f'{{"hits": [{{"id": "mem_1", "created_at": "{moment}"}}]}}'),
    ]

    with timezone.override("Europe/Amsterdam"):
        (run,) = ThreadAdmin.tool_runs(items)

    assert '"created_at": "2026-12-06T10:30:00+01:00"' in run.result
    assert '"after": "2026-12-01T01:00:00+01:00"' in run.arguments
    assert run.record_ids == ["mem_1"]
