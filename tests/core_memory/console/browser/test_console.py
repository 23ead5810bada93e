"""An administrator's day in the console, in a real browser (issue 13): log in, find a person, read a
record and its history's diff, see a contested badge, follow a response's memory trace, change a store
setting, export a person, apply a proposal, switch to English, erase a person — in Dutch and in English."""
from __future__ import annotations

import json
import re
from pathlib import Path

from playwright.sync_api import Page, expect

from audit.models import AuditEvent
from audit.services import person_commitment
from core_memory.base.callers import Caller
from core_memory.persons.models import Person
from memory.models import MemoryRecord
from stores.models import MemoryStore


def test_find_a_person_read_her_contested_record_and_its_history(signed_in: Page, world):
    page = signed_in
    page.locator("tr.model-person th a").click()
    page.get_by_label("Zoek een persoon").fill("ann")
    page.locator("#content").get_by_role("button", name="Zoeken").click()  # the list's own box, not the side menu's
    page.get_by_role("link", name="anna", exact=True).click()

    expect(page.get_by_role("heading", name="Persoon anna")).to_be_visible()
    about = page.locator("#section-about_this_person")
    expect(about.get_by_role("link", name="Anna drinkt koffie zwart")).to_be_visible()
    about.get_by_role("link", name="Anna drinkt koffie zwart").click()

    badge = page.locator("a.badge-contested")
    expect(badge).to_have_text("betwist")
    badge.click()  # the pair side by side (issue 32), the record it contradicts opened from there
    expect(page.locator("#side-2")).to_contain_text("Anna drinkt alleen thee")
    page.locator("#side-2").get_by_role("link", name="Dit record openen (om het te wijzigen)").click()
    expect(page).to_have_url(re.compile(re.escape(world.tea.id.split("_")[1])))
    expect(page.locator(".field-text")).to_contain_text("Anna drinkt alleen thee")

    page.goto(page.url.replace("/change/", "/history/").replace(world.tea.id.split("_")[1], world.moved.id.split("_")[1]))
    edited = page.locator("table.memory-versions tbody tr").first
    expect(edited.locator(".change-kind")).to_have_text("bewerkt")
    expect(edited).to_contain_text("beheerder anna")
    expect(edited.locator("del.diff").first).to_have_text("1,00")
    expect(edited.locator("ins.diff").first).to_have_text("0,80")
    assert AuditEvent.objects.filter(action="memory.console_read", details__page="history", target=world.moved.id).count() == 1


def test_why_did_the_assistant_know_that(signed_in: Page, world):
    page = signed_in
    # The side menu's search box finds the thread by its id (issue 32).
    page.get_by_label("Zoeken in de console").fill(world.thread_id)
    page.get_by_label("Zoeken in de console").press("Enter")
    page.locator("#search-threads").get_by_role("link", name=world.thread_id).click()

    expect(page.get_by_role("heading", name="Waarom wist de assistent dat?")).to_be_visible()
    trace = page.locator(f"#{world.response_id}")
    expect(trace.get_by_role("heading", name="toezeggingen", exact=True)).to_be_visible()
    expect(trace.locator(".trace-dropped")).to_contain_text("paste niet in het tokenbudget")
    expect(trace.locator(".tool-run")).to_contain_text(f"memory__{world.tenant.index.id}__search")
    trace.locator(".tool-run").get_by_role("link", name=world.coffee.id).click()
    expect(page.locator(".field-text")).to_contain_text("Anna drinkt koffie zwart")


def test_a_store_setting_is_changed_in_its_form(signed_in: Page, world):
    page = signed_in
    page.goto(page.url.rstrip("/") + f"/stores/memorystore/{world.tenant.index.id}/change/")

    expect(page.locator(".field-injection__episodes_limit")).to_contain_text("Standaard: 0.")
    page.get_by_label("rangschikking").select_option("blend")
    page.get_by_label("eerdere sessies").fill("3")
    page.get_by_role("button", name="Opslaan", exact=True).click()

    expect(page.locator(".messagelist")).to_be_visible()
    store = MemoryStore.objects.get(index=world.tenant.index)
    assert (store.injection["rank"], store.injection["episodes_limit"]) == ("blend", 3)


def test_export_everything_about_her_as_a_file(signed_in: Page, world):
    page = signed_in
    page.goto(page.url.rstrip("/") + f"/persons/person/{world.tenant.organisation.id}/anna/")

    with page.expect_download() as waiting:
        page.get_by_role("link", name="Exporteer alles over deze persoon (JSON)").click()
    download = waiting.value

    assert download.suggested_filename == f"core-geheugen-{world.tenant.organisation.id}-anna.json"
    document = json.loads(Path(download.path()).read_text())
    assert document["format"] == "core-geheugen.person-export"
    assert world.coffee.id in [record["id"] for record in document["records"]]
    assert AuditEvent.objects.filter(action="person.exported", target="anna", actor="console:anna").count() == 1


def test_apply_a_proposal_after_reading_the_records_it_rests_on(signed_in: Page, world):
    """R-9.5: from the home page's count of waiting proposals to a shared record."""
    page = signed_in
    page.locator("#dashboard a.tile", has_text="Voorstellen die op een besluit wachten").click()
    page.get_by_role("link", name=world.proposal.text).click()

    sources = page.locator("#proposal-sources")
    expect(sources.get_by_role("link", name="bram")).to_be_visible()
    page.get_by_role("button", name="Toepassen").click()

    expect(page.locator(".messagelist")).to_contain_text("Het voorstel is toegepast")
    expect(page.locator("#proposal-status")).to_have_text("toegepast")
    world.proposal.refresh_from_db()
    shared = MemoryRecord.objects.get(pk=world.proposal.applied_record_id)
    assert (shared.subject, shared.text, shared.source) == (None, world.proposal.text, "promotion")


def test_in_english_erase_a_person_after_seeing_what_will_go(signed_in: Page, world):
    page = signed_in
    page.locator("#language-switch-select").select_option("en")
    page.locator("#language-switch").get_by_role("button").click()
    expect(page.get_by_role("heading", name="Memory at a glance")).to_be_visible()

    page.locator("tr.model-person th a").click()
    page.get_by_role("link", name="anna", exact=True).click()
    page.get_by_role("link", name="Erase this person").click()

    counts = page.locator("#erase-counts")
    expect(counts).to_contain_text("10 records (behaviour: 1, commitment: 1, episode: 1, fact: 4, lesson: 1, preference: 2)")
    expect(counts).to_contain_text("the stored rules")
    page.get_by_role("button", name="Yes, erase this person").click()

    expect(page.locator("#erase-receipt-summary")).to_contain_text("anna is erased")
    expect(page.locator("#erase-receipt")).to_contain_text("Records8Episodes1Lessons1")  # episodes and lessons apart
    assert not MemoryRecord.objects.filter(subject="anna").exists()
    assert not Person.objects.filter(subject="anna").exists()
    commitment = person_commitment(caller=Caller.system(organisation_id=world.tenant.organisation.id, actor="test"), subject="anna")
    assert AuditEvent.objects.filter(action="person.erased", target=commitment, actor="console:anna").count() == 1


def test_the_pages_fit_a_1400_pixel_window(signed_in: Page, world):
    """Issue 13: the record list cut its columns off at 1400 px; long texts now wrap everywhere."""
    page = signed_in
    page.set_viewport_size({"width": 1400, "height": 900})
    base = page.url.rstrip("/")
    pages = [
        "/memory/memoryrecord/",
        f"/memory/memoryrecord/{world.moved.id}/history/",
        f"/persons/person/{world.tenant.organisation.id}/anna/",
        f"/threads/thread/{world.thread_id}/change/",
        f"/extraction/extractionswitch/{world.tenant.index.id}/change/",
    ]
    for address in pages:
        page.goto(base + address)
        overflow = page.evaluate(
            "Math.max(document.documentElement.scrollWidth - innerWidth,"
            " ...[...document.querySelectorAll('.results')].map(e => e.scrollWidth - e.clientWidth))"
        )
        assert overflow <= 0, address
