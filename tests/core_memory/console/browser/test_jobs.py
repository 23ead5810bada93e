"""Issue 32: an administrator's jobs done in the console, in a real browser — no API call needed:
the organisation's own settings changed after a page that shows what changes, extraction turned on
for a store that has no switch (its keys picked by name), a contested pair decided side by side, a
proposal changed before it is applied, two rejected at once, duplicates merged, the audit log
narrowed to several actions without her own reads, and at 1024 px a list's first row in view
with its filters folded above it."""
from __future__ import annotations

from django.contrib.admin.utils import quote
from playwright.sync_api import Page, expect

from audit.models import AuditEvent
from core_memory.organisations.models import Organisation
from extraction.models import ExtractionSwitch
from memory.models import MemoryRecord
from tests.core_memory.console.world import propose
from tests.factories import make_index


def test_change_the_organisations_time_zone_and_token_limit_after_seeing_what_changes(signed_in: Page, world):
    page = signed_in
    page.goto(page.url.rstrip("/") + f"/organisations/organisation/{world.tenant.organisation.id}/change/")

    page.get_by_label("tijdzone").select_option("Asia/Tokyo")
    page.get_by_label("maandelijkse tokenlimiet").fill("500000")
    page.get_by_role("button", name="Opslaan", exact=True).click()

    changes = page.locator("#organisation-changes")
    expect(changes).to_contain_text("Asia/Tokyo")
    expect(changes).to_contain_text("500000")
    assert Organisation.objects.get(pk=world.tenant.organisation.pk).timezone != "Asia/Tokyo"
    page.get_by_role("button", name="Ja, wijzig de instellingen").click()

    expect(page.locator("#console-zone")).to_have_text("Tijden in Asia/Tokyo")
    organisation = Organisation.objects.get(pk=world.tenant.organisation.pk)
    assert (organisation.timezone, organisation.monthly_token_limit) == ("Asia/Tokyo", 500000)
    assert AuditEvent.objects.filter(action="organisation.updated", actor="console:anna").exists()


def test_narrow_the_audit_log_to_two_actions_without_her_own_reads(signed_in: Page, world):
    page = signed_in
    page.goto(page.url.rstrip("/") + "/audit/auditevent/")

    page.get_by_label("alleen sleutel aangemaakt").check()
    page.get_by_label("alleen index aangemaakt").check()
    page.get_by_label("behalve de mijne").check()
    page.locator("#actions-filter [type=submit]").click()

    actions = page.locator("#result_list td.field-action_shown")
    expect(actions.first).to_be_visible()
    assert set(actions.all_inner_texts()) <= {"sleutel aangemaakt", "index aangemaakt"}
    expect(page.locator("#result_list")).not_to_contain_text("gelezen in de console")


def test_at_1024_pixels_the_first_record_shows_with_the_filters_folded_above(signed_in: Page, world):
    page = signed_in
    page.set_viewport_size({"width": 1024, "height": 768})
    page.goto(page.url.rstrip("/") + "/memory/memoryrecord/")

    first_row = page.locator("#result_list tbody tr").first
    expect(first_row).to_be_in_viewport()
    expect(page.get_by_role("link", name="toezegging")).not_to_be_visible()  # a type filter, folded
    page.locator("details.console-filters > summary").click()
    expect(page.get_by_role("link", name="toezegging", exact=True)).to_be_visible()


def test_turn_extraction_on_for_a_store_without_a_switch_from_its_page(signed_in: Page, world):
    archive = make_index(world.tenant.organisation, name="archief")
    page = signed_in
    page.goto(page.url.rstrip("/") + f"/stores/memorystore/{archive.id}/change/")
    expect(page.locator(".field-extraction")).to_contain_text("nog geen schakelaar (uit)")
    page.locator("#extraction-link").click()

    expect(page.locator("#switch-not-set")).to_be_visible()
    form = page.locator("#switch-settings-form")
    form.locator("#id_switch__enabled").check()
    form.locator("#id_switch__model").select_option("fake-chat")
    form.locator("#id_switch__types").fill("fact, preference")
    form.locator(f"input[name=switch__filters__key_ids][value='{world.key.id}']").check()  # by its name: only this key's conversations
    expect(form.locator(".field-switch__filters__key_ids")).to_contain_text(f"{world.key.name} ({world.key.id})")
    form.locator("[type=submit]").click()
    expect(page.locator("#switch-changes")).to_contain_text("fake-chat")
    assert not ExtractionSwitch.objects.filter(pk=archive.id).exists()
    page.get_by_role("button", name="Ja, stel de schakelaar in").click()

    expect(page.locator("#switch-state h2")).to_contain_text("actief")
    switch = ExtractionSwitch.objects.get(pk=archive.id)
    assert (switch.enabled, switch.model, switch.filter_key_ids) == (True, "fake-chat", [world.key.id])


def test_decide_a_contested_pair_side_by_side_as_not_a_contradiction(signed_in: Page, world):
    page = signed_in
    page.goto(page.url.rstrip("/") + f"/memory/memoryrecord/{world.coffee.id}/change/")
    page.locator("a.badge-contested").first.click()

    expect(page.locator("#side-1")).to_contain_text("Anna drinkt koffie zwart")
    expect(page.locator("#side-2")).to_contain_text("Anna drinkt alleen thee")
    page.get_by_role("button", name="Geen tegenspraak: beide houden").click()

    expect(page.locator(".messagelist")).to_contain_text("gelden niet meer als elkaar tegensprekend")
    assert not MemoryRecord.objects.get(pk=world.coffee.pk).contested
    assert AuditEvent.objects.filter(action="memory.contradiction_dismissed", actor="console:anna").exists()


def test_change_a_proposal_before_applying_it_reject_two_at_once_and_merge_duplicates(signed_in: Page, world, write):
    page = signed_in
    base = page.url.rstrip("/")
    # A proposal changed before it is applied: what changes shown first.
    page.goto(f"{base}/maintenance/proposal/{quote(world.proposal.pk)}/change/")
    page.locator("#id_text").fill("Declaraties gaan vóór de 25e naar Financiën.")
    page.get_by_role("button", name="Wijzigingen bekijken").click()
    expect(page.locator("#proposal-changes ins")).to_have_text("Declaraties gaan vóór de 25e naar Financiën.")
    page.get_by_role("button", name="Ja, zo toepassen").click()
    expect(page.locator(".messagelist")).to_contain_text("toegepast zoals u het wijzigde")
    world.proposal.refresh_from_db()
    assert MemoryRecord.objects.get(pk=world.proposal.applied_record_id).text == "Declaraties gaan vóór de 25e naar Financiën."

    # Two proposals rejected in one decision from the queue.
    pending = [propose(world.tenant.index, [write(text, subject="bram"), write(text, subject="carla")]) for text in ("Lunch om twaalf uur", "Parkeren in de garage")]
    page.goto(f"{base}/maintenance/proposal/")
    for proposal in pending:
        page.locator(f"#result_list input.action-select[value='{proposal.pk}']").check()
    page.locator("select[name=action]").first.select_option(label="De geselecteerde voorstellen afwijzen")
    page.locator("button[name=index]").first.click()
    expect(page.locator("#bulk-proposals tbody tr")).to_have_count(2)
    page.get_by_role("button", name="Ja, afwijzen").click()
    expect(page.locator(".messagelist")).to_contain_text("2 voorstellen afgewezen")
    assert AuditEvent.objects.filter(action="proposal.rejected", target__in=[proposal.pk for proposal in pending]).count() == 2

    # Two duplicates merged: the second kept, in words of its own.
    twin = write("Anna woont nu in Utrecht", subject="anna")
    page.goto(f"{base}/memory/memoryrecord/")
    for record in (world.moved, twin):
        page.locator(f"#result_list input.action-select[value='{record.id}']").check()
    page.locator("select[name=action]").first.select_option(label="De geselecteerde records samenvoegen (dubbele)")
    page.locator("button[name=index]").first.click()
    page.locator("#merge-records tr", has_text="Anna woont in Utrecht").get_by_role("radio").check()
    page.locator("#merge-text").fill("Anna woont sinds kort in Utrecht")
    page.get_by_role("button", name="Het samenvoegen controleren").click()
    expect(page.locator("#merge-ended")).to_contain_text("Anna woont nu in Utrecht")
    page.get_by_role("button", name="Ja, samenvoegen").click()
    expect(page.locator(".field-text")).to_contain_text("Anna woont sinds kort in Utrecht")
    twin.refresh_from_db()
    assert (twin.status, twin.replaced_by_id) == ("ended", world.moved.id)
    assert AuditEvent.objects.filter(action="memory.merged", target=twin.id, actor="console:anna").exists()
