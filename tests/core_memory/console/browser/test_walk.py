"""The browser walk (issue 24, item 8): Chromium opens every kind of console page in Dutch and in
English at 1400 and 1024 px and looks — the page wider than the window, a cell whose content is cut
off, a cell narrower than its longest word (headers stacked letter by letter), a console error or a
CSP violation, and in Dutch a string the catalogue lacks (the live server runs in this process, so
the catalogue's look-ups are watched as in test_translations). Every page is saved as a screenshot
under var/console-walk/ for a person to look at."""
from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from django.contrib.admin.utils import quote
from playwright.sync_api import Page, Response

from tests.core_memory.console.test_translations import untranslated  # noqa: F401 — a fixture
from tests.factories import CONSOLE_PASSWORD

SCREENSHOTS = Path(__file__).resolve().parents[4] / "var" / "console-walk"
WIDTHS = (1400, 1024)
LANGUAGES = ("nl", "en")

# Measured in the page: what overflows the window, which cells cut their content off or are narrower
# than their longest word (measured with the cell's own font).
LOOK = """() => {
  const problems = [];
  const overflow = document.documentElement.scrollWidth - window.innerWidth;
  if (overflow > 0) problems.push(`page ${overflow}px wider than the window`);
  const canvas = document.createElement('canvas').getContext('2d');
  for (const cell of document.querySelectorAll('#content td, #content th')) {
    if (!cell.offsetParent || cell.closest('.visually-hidden')) continue;
    const style = getComputedStyle(cell);
    const name = (cell.innerText || '').trim().slice(0, 40);
    if (cell.scrollWidth > cell.clientWidth + 1 && style.overflowX !== 'auto' && style.overflowX !== 'scroll')
      problems.push(`cell cut off (${cell.scrollWidth} > ${cell.clientWidth}): ${name}`);
    canvas.font = `${style.fontStyle} ${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
    const padding = parseFloat(style.paddingLeft) + parseFloat(style.paddingRight);
    // Words as a reader sees them; ids and long values may break anywhere by design (.breakable).
    if (cell.closest('.breakable')) continue;
    const words = (cell.innerText || '').split(/\\s+/).filter(word => word.length > 1 && word.length < 30);
    for (const word of words) {
      const width = canvas.measureText(style.textTransform === 'uppercase' ? word.toUpperCase() : word).width;
      if (cell.clientWidth - padding + 1 < width) { problems.push(`cell narrower than "${word}"`); break; }
    }
  }
  for (const box of document.querySelectorAll('.results')) {
    if (box.scrollWidth > box.clientWidth + 1) problems.push(`list ${box.scrollWidth - box.clientWidth}px wider than its box`);
  }
  return problems;
}"""


def records_chosen_for(action: str) -> Callable[[Page, str], Response | None]:
    """The page between choosing records in the list and `action` on them (a POST of the list's
    action form; nothing is exported or deleted before it is confirmed)."""

    def visit(page: Page, base: str) -> Response | None:
        page.goto(f"{base}/console/memory/memoryrecord/")
        page.locator("#result_list input.action-select").first.check()
        page.locator("select[name=action]").first.select_option(action)
        with page.expect_navigation() as navigation:
            page.locator("button[name=index]").first.click()
        page.locator("input[name=post][value=yes]").wait_for(state="attached")  # the confirmation, not the list again
        return navigation.value

    return visit


def switch_changes_checked(index_id: str) -> Callable[[Page, str], Response | None]:
    """The page that shows what the switch's form would change (a POST; set only once confirmed)."""

    def visit(page: Page, base: str) -> Response | None:
        page.goto(f"{base}/console/extraction/extractionswitch/{quote(index_id)}/change/")
        with page.expect_navigation() as navigation:
            page.locator("#switch-settings-form [type=submit]").click()
        page.locator("input[name=confirmed][value='1']").wait_for(state="attached")  # the confirmation, not the form again
        return navigation.value

    return visit


def pages_of(world) -> dict[str, str | Callable[[Page, str], Response | None]]:
    """One page of each kind, by a short name (the screenshot's): an address, or how a browser
    reaches a page that answers a form."""
    organisation = world.tenant.organisation.id
    index = world.tenant.index.id
    record = quote(world.moved.id)
    return {
        "home": "/console/",
        "organisations": "/console/organisations/organisation/",
        "organisation": f"/console/organisations/organisation/{quote(organisation)}/change/",
        "keys": "/console/keys/apikey/",
        "key": f"/console/keys/apikey/{quote(world.key.id)}/change/",
        "stores": "/console/stores/memorystore/",
        "store": f"/console/stores/memorystore/{quote(index)}/change/",
        "records": "/console/memory/memoryrecord/",
        "record": f"/console/memory/memoryrecord/{record}/change/",
        "record-history": f"/console/memory/memoryrecord/{record}/history/",
        "record-delete": f"/console/memory/memoryrecord/{record}/delete/",
        "persons": "/console/persons/person/",
        "person": f"/console/persons/person/{organisation}/anna/",
        "person-erase": f"/console/persons/person/{organisation}/anna/erase/",
        "threads": "/console/threads/thread/",
        "thread": f"/console/threads/thread/{quote(world.thread_id)}/change/",
        "switches": "/console/extraction/extractionswitch/",
        "switch": f"/console/extraction/extractionswitch/{quote(index)}/change/",
        "switch-confirm": switch_changes_checked(index),
        "records-export-confirm": records_chosen_for("export_records"),
        "records-delete-confirm": records_chosen_for("delete_records"),
        "proposals": "/console/maintenance/proposal/",
        "proposal": f"/console/maintenance/proposal/{quote(world.proposal.pk)}/change/",
        "audit": "/console/audit/auditevent/",
    }


@pytest.mark.timeout(900)  # 96 pages with their screenshots; about a minute on an idle machine
def test_every_console_page_fits_and_speaks_one_language_at_both_widths(world, live_server, page: Page, untranslated):  # noqa: F811
    """Issue 24: no overflow, clipped column or letter-by-letter header at 1400 or 1024 px, no
    console error or CSP violation, and in Dutch no string the catalogue lacks. One world for both
    languages: building it is most of the walk's time."""
    errors: list[str] = []
    page.on("console", lambda message: errors.append(f"{page.url}: {message.text}") if message.type in ("error", "warning") else None)
    page.on("pageerror", lambda error: errors.append(f"{page.url}: {error}"))
    page.set_default_timeout(10_000)
    page.goto(f"{live_server.url}/console/login/")
    page.locator("#id_username").fill("anna")
    page.locator("#id_password").fill(CONSOLE_PASSWORD)
    page.locator("#login-form [type=submit]").click()
    page.wait_for_url(f"{live_server.url}/console/")
    untranslated.clear()  # signing in is no console page of ours

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    problems: dict[str, list[str]] = {}
    for language in LANGUAGES:
        page.locator("#language-switch-select").select_option(language)
        page.locator("#language-switch [type=submit]").click()
        page.wait_for_load_state()
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": 900})
            for name, address in pages_of(world).items():
                response = address(page, live_server.url) if callable(address) else page.goto(live_server.url + address)
                where = f"{language} {width} {name}"
                if response is None or response.status != 200:
                    problems[where] = [f"status {response and response.status}"]
                    continue
                found = page.evaluate(LOOK)
                if page.evaluate("document.documentElement.lang") != language:
                    found.append(f"in {page.evaluate('document.documentElement.lang')}")
                if found:
                    problems[where] = found
                page.screenshot(path=SCREENSHOTS / f"{language}-{width}-{name}.png", full_page=True)

    assert problems == {}, "\n".join(f"{where}: {found}" for where, found in problems.items())
    assert errors == []
    assert sorted(untranslated) == []
