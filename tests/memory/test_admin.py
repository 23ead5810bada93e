"""The console's Geheugen section (memory.admin, R-10.1, R-5.4): records of her organisation,
their history, corrections through the services; who may not read them sees nothing."""
from __future__ import annotations

import json

import pytest
from django.contrib.admin.utils import quote
from django.test import Client
from django.utils import timezone

from audit.models import AuditEvent
from core_memory.base.callers import Caller
from core_memory.keys.services import key_delete
from core_memory.threads.services import thread_create
from memory.models import MemoryRecord
from memory.services.writes import RecordDraft, record_write
from tests.core_memory.console.world import contest
from tests.factories import console_client, make_index, resolved_for, staff_without_organisation
from tests.memory.conftest import RECORDS, age, listed_ids, read_events, record_url, version_rows

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_password_hashing")]

# --- the list ----------------------------------------------------------------------------------------


def test_the_list_shows_only_her_organisations_records_with_stored_and_effective_confidence(console, write, other_write):
    """R-10.1, R-12.1."""
    own = write("Anna drinkt koffie zwart", subject="anna", confidence=0.8)
    foreign = other_write("Bert drinkt thee")

    response = console.get(RECORDS)

    assert response.status_code == 200
    assert listed_ids(response) == [own.id]
    page = response.content.decode()
    assert foreign.id not in page and "Bert drinkt thee" not in page
    assert response.context["cl"].result_list[0].effective_confidence == 0.8  # no key of hers decays facts
    assert '<td class="field-confidences">0,80</td>' in page  # stored = effective: shown once (in Dutch)


def test_effective_confidence_reads_by_default_with_the_organisations_shortest_half_lives_and_says_so(
    console, tenant, other_tenant, write
):
    """R-5.9, R-10.1: the console reads with no key; by default per type the shortest half-life of her
    usable keys, stated above the list; the decay filter reads as one key, or without decay."""
    _client, decaying_key = tenant.key_client(memory={"decay": {"half_life_days": {"fact": 10}}})
    tenant.key_client(memory={"decay": {"half_life_days": {"fact": 20, "preference": 5}}})
    foreign_key = other_tenant.key_client(memory={"decay": {"half_life_days": {"fact": 1}}})[1]
    record = age(write("Anna woont in Utrecht"), days=10)
    fresh = write("Anna drinkt koffie", confidence=0.9)

    def effective(query: str) -> float:
        response = console.get(RECORDS + query)
        return next(item for item in response.context["cl"].result_list if item.id == record.id).effective_confidence

    assert effective("") == pytest.approx(0.5, abs=0.001)
    assert effective("?decay_key=-") == 1.0
    assert effective(f"?decay_key={decaying_key.id}") == pytest.approx(0.5, abs=0.001)
    assert effective(f"?decay_key={foreign_key.id}") == 1.0  # not her organisation's key: no decay
    statement = console.get(RECORDS).context["decay_statement"]
    assert statement == (
        "De effectieve betrouwbaarheid is gelezen met de standaardhalfwaardetijden van de organisatie (per type de kortste "
        "die een van haar bruikbare sleutels instelt): feit: 10 dagen, voorkeur: 5 dagen."
    )
    assert console.get(RECORDS, {"decay_key": "-"}).context["decay_statement"] == (
        "De effectieve betrouwbaarheid is gelezen met geen verval: de effectieve betrouwbaarheid is de opgeslagen "
        "betrouwbaarheid; geen type neemt af."
    )
    least_effective_first = console.get(RECORDS, {"decay_key": decaying_key.id, "o": "4"})  # the confidence column, after the selection box
    assert listed_ids(least_effective_first) == [record.id, fresh.id]
    opened_from_the_list = console.get(record_url(record), {"_changelist_filters": "decay_key=-"})
    assert opened_from_the_list.context["original"].effective_confidence == 1.0
    choices = console.get(RECORDS).content.decode()
    assert decaying_key.id in choices and foreign_key.id not in choices


def test_a_contested_record_shows_a_warning_badge_linking_to_the_pair_side_by_side(console, write):
    """R-9.2, R-10.1: a warning, never a green tick; issue 32: it leads to both records side by side."""
    coffee = write("Anna drinkt koffie", subject="anna")
    tea = write("Anna drinkt alleen thee", subject="anna")
    contest(coffee, tea)

    page = console.get(RECORDS).content.decode()
    record_page = console.get(record_url(coffee)).content.decode()

    pair = f"/console/memory/memoryrecord/{quote(coffee.id)}/contested/{quote(tea.id)}/"
    badge = f'<a class="badge-contested" href="{pair}" title="spreekt {tea.id} tegen">betwist</a>'
    assert badge in page and badge in record_page
    assert "icon-yes.svg" not in page


def test_the_record_list_has_a_date_hierarchy_by_created_or_by_updated(console, write):
    write("Anna drinkt koffie")

    by_created = console.get(RECORDS)
    by_updated = console.get(RECORDS, {"dates": "updated"})

    assert by_created.context["cl"].date_hierarchy == "created_at"
    assert by_updated.context["cl"].date_hierarchy == "updated_at"
    assert "updated_at__year=" in by_updated.content.decode()


def test_type_labels_are_translated_in_the_list_and_its_filter(console, write):
    """R-10.4."""
    write("Anna houdt van jazz", type="preference", subject="anna")

    response = console.get(RECORDS)

    assert '<td class="field-type_name">voorkeur</td>' in response.content.decode()
    type_filter = next(spec for spec in response.context["cl"].filter_specs if spec.parameter_name == "type")
    assert type_filter.lookup_choices == [("preference", "voorkeur")]


@pytest.fixture
def spread(tenant, write):
    """Records across two of her indexes, persons, types, sources and statuses."""
    second = make_index(tenant.organisation, name="tweede")
    coffee = write("Anna drinkt koffie", subject="anna")
    tea = write("Iedereen drinkt thee", type="preference")
    call = write("Bert bellen", type="commitment", subject="bert", index=second, source="extraction")
    old = write("Anna woont in Delft", subject="anna")
    moved = write("Anna woont in Utrecht", subject="anna", replaces=old.id)
    MemoryRecord.objects.filter(pk=tea.pk).update(contested=True)
    return {"second": second, "coffee": coffee, "tea": tea, "call": call, "old": old, "moved": moved}


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (lambda s: f"index__id__exact={s['second'].id}", ["call"]),
        (lambda s: "type=preference", ["tea"]),
        (lambda s: "person=anna", ["moved", "old", "coffee"]),
        (lambda s: "person=-", ["tea"]),
        (lambda s: "contested__exact=1", ["tea"]),
        (lambda s: "source__exact=extraction", ["call"]),
        (lambda s: "status__exact=ended", ["old"]),
        (lambda s: "person=anna&status__exact=active", ["moved", "coffee"]),
    ],
)
def test_filters_narrow_the_list(console, spread, query, expected):
    """R-10.1: by index, type, person (or shared), contested, source and status."""
    response = console.get(f"{RECORDS}?{query(spread)}")

    assert response.status_code == 200
    assert listed_ids(response) == [spread[name].id for name in expected]


def test_the_index_filter_offers_only_her_organisations_live_indexes(console, tenant, other_tenant, spread):
    """R-12.1."""
    gone = make_index(tenant.organisation, name="weg")
    gone.deleted_at = gone.created_at
    gone.save(update_fields=["deleted_at"])

    response = console.get(RECORDS)

    index_filter = next(spec for spec in response.context["cl"].filter_specs if spec.title == "index")
    assert [index_id for index_id, _name in index_filter.lookup_choices] == [tenant.index.id, spread["second"].id]  # by name
    assert other_tenant.index.id not in response.content.decode()


def test_full_text_search_finds_a_dutch_word_by_its_stem(console, write, other_write):
    """R-10.1: the stored Dutch+English vector, as the API's `q`."""
    invoices = write("Acme wil de facturen per post")
    write("Acme wil koffie")
    other_write("De facturen van Bert")

    response = console.get(RECORDS, {"q": "factuur"})

    assert listed_ids(response) == [invoices.id]


def test_a_search_of_only_stop_words_finds_nothing(console, write):
    write("de het een")

    assert listed_ids(console.get(RECORDS, {"q": "de het"})) == []


# --- the record page and its history ---------------------------------------------------------------


def test_the_record_page_shows_its_versions_and_correction_links(console, write):
    """R-5.4, R-10.1: versions, confirmations, corrections with links both ways, each kind named."""
    old = write("Anna woont in Delft", subject="anna")
    write("anna woont in delft.", subject="anna")  # a confirmation
    moved = write("Anna woont in Utrecht", subject="anna", replaces=old.id)

    old_page = console.get(record_url(old)).content.decode()
    moved_page = console.get(record_url(moved)).content.decode()

    assert f'href="{record_url(moved)}"' in old_page
    assert [(row["change"], row["by"]) for row in version_rows(old_page)] == [
        ("beëindigd door een correctie", "test"), ("bevestigd", "test"), ("aangemaakt", "test")
    ]
    assert f'href="{record_url(old)}"' in moved_page
    assert [row["change"] for row in version_rows(moved_page)] == ["aangemaakt als correctie"]
    assert 'name="_save"' not in old_page  # an ended record is read-only


def test_the_record_page_shows_the_newest_versions_and_links_to_all(console, write, monkeypatch):
    monkeypatch.setattr("memory.admin.columns.RECORD_PAGE_VERSIONS", 2)
    record = write("Anna drinkt koffie")
    write("Anna drinkt koffie")
    write("Anna drinkt koffie")

    page = console.get(record_url(record)).content.decode()

    assert [row["change"] for row in version_rows(page)] == ["bevestigd", "bevestigd"]
    assert f'<a href="{record_url(record, "history")}">Alle versies</a>' in page
    every = version_rows(console.get(record_url(record, "history")).content.decode())
    assert [row["change"] for row in every] == ["bevestigd", "bevestigd", "aangemaakt"]


def test_the_history_page_lists_every_version(console, write):
    """R-5.4."""
    record = write("Anna drinkt koffie")
    write("Anna drinkt koffie!")

    response = console.get(record_url(record, "history"))

    assert response.status_code == 200
    assert [row["change"] for row in version_rows(response.content.decode())] == ["bevestigd", "aangemaakt"]


def test_history_names_who_changed_what_and_highlights_the_change(console, tenant):
    """Issue 13 item 2: a key by its name, an administrator as such; text, confidence and metadata diffed."""
    record = record_write(
        caller=Caller(key=tenant.key, subject="anna", actor=tenant.key.id),
        index=tenant.index,
        draft=RecordDraft(
            type="fact",
            text="Anna drinkt koffie zwart",
            metadata={"bron": "gesprek", "oud": 1},
        ),
    ).record
    console.post(record_url(record), record_form(record, text="Anna drinkt thee zwart", confidence="0.7", metadata='{"bron": "mail", "nieuw": true}'))
    console.post(record_url(record, "delete"), {"post": "yes"})

    rows = version_rows(console.get(record_url(record, "history")).content.decode())

    assert [(row["change"], row["by"]) for row in rows] == [
        ("verwijderd", "beheerder anna"), ("bewerkt", "beheerder anna"), ("aangemaakt", "sleutel “owner”")
    ]
    edited = rows[1]
    assert edited["text_html"] == 'Anna drinkt <del class="diff">koffie</del><ins class="diff">thee</ins> zwart'
    assert edited["confidence_html"] == '<del class="diff">1,00</del> → <ins class="diff">0,70</ins>'
    assert edited["metadata_html"] == (
        'bron: <del class="diff">"gesprek"</del> → <ins class="diff">"mail"</ins><br>'
        '<ins class="diff">nieuw: true</ins><br><del class="diff">oud: 1</del>'
    )
    assert rows[0]["text_html"] == "Anna drinkt thee zwart"  # the deletion changed no text
    assert rows[2]["text"] == "Anna drinkt koffie zwart"


def test_history_names_a_deleted_key_by_its_id(console, tenant):
    client, key = tenant.key_client(name="weg")
    record = record_write(caller=Caller(key=key, subject=None, actor=key.id), index=resolved_for(key, tenant.index), draft=RecordDraft(type="fact", text="Iets")).record
    key_id = key.id
    key_delete(caller=Caller.system(organisation_id=key.organisation_id, actor="test"), key_id=key.id)

    rows = version_rows(console.get(record_url(record, "history")).content.decode())

    assert rows[0]["by"] == f"verwijderde sleutel {key_id}"


def test_record_text_is_escaped_on_every_page(console, write):
    """R-12.2: a record's text is data."""
    record = write("<script>alert(1)</script>")

    for url in (RECORDS, record_url(record), record_url(record, "history")):
        assert "<script>alert(1)" not in console.get(url).content.decode()


# --- isolation (R-12.1) ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("who", "list_status", "record_status"),
    [
        (lambda: Client(), 302, 302),  # to the login page
        # A record page is a 404 for whoever administers no organisation: it admits nothing exists.
        (lambda: console_client(staff_without_organisation(with_permissions=False)), 403, 404),
        (lambda: console_client(staff_without_organisation(with_permissions=True)), 403, 404),
    ],
)
@pytest.mark.parametrize("page", ["list", "change", "history", "delete"])
def test_who_may_not_read_records_is_refused_and_nothing_is_written(write, who, list_status, record_status, page):
    """R-10.1, R-10.2: only an organisation's administrators (or a superuser) read its memory."""
    record = write("Anna drinkt koffie")
    url = RECORDS if page == "list" else record_url(record, page)

    response = who().get(url)

    assert response.status_code == (list_status if page == "list" else record_status)
    assert "Anna drinkt koffie" not in response.content.decode()
    assert not read_events().exists()
    assert MemoryRecord.objects.get(pk=record.pk).history.count() == 1


@pytest.mark.parametrize("page", ["change", "history", "delete"])
def test_another_organisations_record_is_a_404_and_no_read(console, other_write, page):
    """R-2.5, R-12.1."""
    foreign = other_write("Bert drinkt thee")

    response = console.get(record_url(foreign, page))

    assert response.status_code == 404
    assert not read_events().exists()


def test_another_organisations_record_cannot_be_changed_or_deleted(console, other_write):
    foreign = other_write("Bert drinkt thee")
    versions = foreign.history.count()

    changed = console.post(record_url(foreign), {"text": "overgenomen", "metadata": "{}", "confidence": "1"})
    deleted = console.post(record_url(foreign, "delete"), {"post": "yes"})

    assert (changed.status_code, deleted.status_code) == (404, 404)
    foreign.refresh_from_db()
    assert (foreign.text, foreign.status, foreign.history.count()) == ("Bert drinkt thee", "active", versions)
    assert not AuditEvent.objects.filter(action__in=["memory.updated", "memory.deleted", "memory.console_read"]).exists()


# --- corrections and deletion through the services ---------------------------------------------------


def record_form(record: MemoryRecord, **changes) -> dict:
    form = {"text": record.text, "metadata": json.dumps(record.metadata), "confidence": str(record.confidence)}
    form.update(changes)
    return form


def test_a_correction_goes_through_the_record_service(console, tenant, write):
    """R-5.7, R-10.1, R-11.2: a new version, the decay clock restarted, `memory.updated` audited."""
    record = age(write("Anna drinkt koffie", subject="anna"), days=30)
    versions = record.history.count()

    before = timezone.now()
    response = console.post(record_url(record), record_form(record, text="Anna drinkt thee", confidence="0.7"))
    after = timezone.now()

    assert response.status_code == 302
    changed = MemoryRecord.objects.get(pk=record.pk)
    assert (changed.text, changed.normalised_text, changed.confidence) == ("Anna drinkt thee", "anna drinkt thee", 0.7)
    assert before <= changed.changed_at <= after
    assert changed.history.count() == versions + 1
    assert changed.history.first().history_change_reason == "updated by console:anna"
    event = AuditEvent.objects.get(action="memory.updated")
    assert (event.organisation_id, event.actor, event.target) == (tenant.organisation.id, "console:anna", record.id)
    assert event.details == {"fields": ["text", "confidence"]}


def test_a_commitment_is_marked_done_in_the_console(console, write):
    """R-5.7."""
    record = write("Offerte sturen", type="commitment", subject="anna")

    response = console.post(record_url(record), record_form(record, done="on", due_at_0="", due_at_1=""))

    assert response.status_code == 302
    assert MemoryRecord.objects.get(pk=record.pk).done is True
    assert AuditEvent.objects.get(action="memory.updated").details == {"fields": ["done"]}


def test_a_correction_the_service_refuses_changes_nothing_and_says_why(console, write):
    """R-5.4: one active record per person, type and text."""
    write("Anna drinkt koffie", subject="anna")
    tea = write("Anna drinkt thee", subject="anna")

    response = console.post(record_url(tea), record_form(tea, text="anna drinkt koffie."), follow=True)

    assert MemoryRecord.objects.get(pk=tea.pk).text == "Anna drinkt thee"
    assert not AuditEvent.objects.filter(action="memory.updated").exists()
    assert [str(message) for message in response.context["messages"]] == ["Een actief record van deze persoon en dit type heeft die tekst al."]


# The console speaks Dutch by default.
FORM_ERRORS = {
    "confidence": "Zorg ervoor dat deze waarde hoogstens 1.0 is.",
    "metadata": "Metadata is een JSON-object.",
    "text": "Dit veld is vereist.",
}


@pytest.mark.parametrize(("field", "value"), [("confidence", "1.5"), ("metadata", "[1, 2]"), ("text", "   ")])
def test_an_invalid_correction_is_a_form_error(console, write, field, value):
    record = write("Anna drinkt koffie")

    response = console.post(record_url(record), record_form(record, **{field: value}))

    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {field: [FORM_ERRORS[field]]}
    assert MemoryRecord.objects.get(pk=record.pk).history.count() == 1


def test_an_ended_record_cannot_be_changed(console, write):
    """R-5.4: a correction's predecessor stays as it was."""
    old = write("Anna woont in Delft")
    write("Anna woont in Utrecht", replaces=old.id)

    response = console.post(record_url(old), record_form(old, text="Anna woont in Leiden"))

    assert response.status_code == 403
    assert MemoryRecord.objects.get(pk=old.pk).text == "Anna woont in Delft"


def test_deleting_in_the_console_goes_through_the_delete_service(console, tenant, write):
    """R-5.8, R-11.2: a soft delete whose history stays readable in the console."""
    record = write("Anna drinkt koffie")

    response = console.post(record_url(record, "delete"), {"post": "yes"})

    assert response.status_code == 302
    deleted = MemoryRecord.objects.get(pk=record.pk)
    assert deleted.status == "deleted"
    assert deleted.history.first().history_change_reason == "deleted by console:anna"
    event = AuditEvent.objects.get(action="memory.deleted")
    assert (event.actor, event.target) == ("console:anna", record.id)
    assert console.get(record_url(record, "history")).status_code == 200
    assert console.get(record_url(record, "delete")).status_code == 403


def test_records_are_never_added_in_the_console(console):
    assert console.get(f"{RECORDS}add/").status_code == 403


def test_a_records_provenance_links_its_thread_under_the_person(console, tenant, write):
    """R-10.1: provenance, without a column of its own."""
    thread = thread_create(caller=Caller(key=tenant.key, subject="anna"))
    write("Anna drinkt koffie", subject="anna", provenance={"thread_id": thread.id, "item_ids": ["itm_a", "itm_b"], "response_id": None})

    page = console.get(RECORDS).content.decode()

    assert f'<small class="provenance"><a href="/console/threads/thread/{quote(thread.id)}/change/">gesprek</a> · 2 berichten</small>' in page


def test_selected_records_are_deleted_together_after_a_page_that_lists_them(console, tenant, write, other_write):
    """Issue 24: bulk delete through the memory service — each deletion versioned and audited —
    after a confirmation that itself is an audited read; another organisation's record is untouched."""
    first, second, kept = write("Een", subject="anna"), write("Twee", subject="anna"), write("Drie", subject="anna")
    foreign = other_write("Van een ander")
    chosen = {"action": "delete_records", "_selected_action": [first.id, second.id, foreign.id]}

    confirm = console.post("/console/memory/memoryrecord/", chosen)

    assert confirm.status_code == 200
    assert [record.id for record in confirm.context["records"]] == sorted([first.id, second.id])
    assert MemoryRecord.objects.filter(status="deleted").count() == 0
    assert AuditEvent.objects.filter(action="memory.console_read", details__page="bulk-delete_records").count() == 1

    console.post("/console/memory/memoryrecord/", {**chosen, "post": "yes"})

    statuses = dict(MemoryRecord.objects.unscoped().values_list("id", "status"))
    assert (statuses[first.id], statuses[second.id], statuses[kept.id], statuses[foreign.id]) == ("deleted", "deleted", "active", "active")
    deleted = AuditEvent.objects.filter(action="memory.deleted", actor="console:anna").values_list("target", flat=True)
    assert sorted(deleted) == sorted([first.id, second.id])


def test_selected_records_are_exported_as_import_lines_with_history_audited(console, tenant, write):
    """Issue 24: bulk export gives the lines import_memory reads back, audited as memory.exported."""
    first, second = write("Een", subject="anna"), write("Twee", subject="bert")
    chosen = {"action": "export_records", "_selected_action": [first.id, second.id]}

    assert console.post("/console/memory/memoryrecord/", chosen).status_code == 200
    response = console.post("/console/memory/memoryrecord/", {**chosen, "post": "yes"})

    assert response["Content-Type"].startswith("application/x-ndjson")
    lines = [json.loads(line) for line in response.content.decode().splitlines()]
    assert [(line["id"], line["text"], len(line["history"])) for line in lines] == [(first.id, "Een", 1), (second.id, "Twee", 1)]
    event = AuditEvent.objects.get(action="memory.exported")
    assert (event.actor, event.details["record_ids"]) == ("console:anna", [first.id, second.id])


def test_times_are_shown_in_the_organisations_zone_and_say_which(console, tenant, write):
    """R-10.1: a record made at 21:17 UTC for an Amsterdam organisation reads 22:17 CET, and the
    page says in which zone its times are (it showed "21:17", no zone)."""
    from datetime import datetime, timezone as dt_timezone

    from core_memory.organisations.models import Organisation

    Organisation.objects.filter(pk=tenant.organisation.pk).update(timezone="Europe/Amsterdam")
    record = write("Anna woont in Leiden")
    MemoryRecord.objects.unscoped().filter(pk=record.pk).update(created_at=datetime(2026, 12, 1, 21, 17, tzinfo=dt_timezone.utc))

    page = console.get(record_url(record)).content.decode()

    assert "22:17 CET" in page and "21:17" not in page
    assert "Europe/Amsterdam" in page
