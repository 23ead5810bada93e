"""Issue 32: an administrator's jobs done in the console, in a real browser — no API call needed:
the organisation's own settings changed after a page that shows what changes, the audit log
narrowed to several actions without her own reads, and at 1024 px a list's first row in view
with its filters folded above it."""
from __future__ import annotations

from playwright.sync_api import Page, expect

from audit.models import AuditEvent
from core_memory.organisations.models import Organisation


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
