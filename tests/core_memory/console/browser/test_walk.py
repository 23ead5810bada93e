"""The browser walk (issue 24, item 8): Chromium opens every kind of console page in Dutch and in
English at 1400 and 1024 px and looks — the page wider than the window, a cell whose content is cut
off, a cell narrower than its longest word (headers stacked letter by letter), a console error or a
CSP violation, and in Dutch a string the catalogue lacks (the live server runs in this process, so
the catalogue's look-ups are watched as in test_translations). Every page is saved as a screenshot
under var/console-walk/ for a person to look at."""
from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from django.contrib.admin.utils import quote
from playwright.sync_api import Page, Response

from audit.models import AuditEvent
from core_memory.webhooks.models import WebhookSubscription
from tests.core_memory.console.test_translations import untranslated  # noqa: F401 — a fixture
from tests.factories import CONSOLE_PASSWORD

SCREENSHOTS = Path(__file__).resolve().parents[4] / "var" / "test-results" / "console-walk"
# A developer mending one page may walk less (CONSOLE_WALK_PAGES=records,record-history,
# CONSOLE_WALK_LANGUAGES=nl, CONSOLE_WALK_WIDTHS=1024); CI walks everything.
WIDTHS = tuple(int(width) for width in os.environ.get("CONSOLE_WALK_WIDTHS", "1400,1024").split(","))
LANGUAGES = tuple(os.environ.get("CONSOLE_WALK_LANGUAGES", "nl,en").split(","))
PAGES = [name for name in os.environ.get("CONSOLE_WALK_PAGES", "").split(",") if name]

# Measured in the page: what overflows the window; any element whose content is cut off — its scroll
# size beyond its box while it hides its overflow — unless it ends in an ellipsis with the whole value
# in its title; a cell whose content spills out of it or that is narrower than its longest word
# (headers stacked letter by letter); a word broken inside (its letters on two lines); and visible
# words not in the page's language: in Dutch the code words of the identifiers (audit actions,
# capability and option names, raw JSON), in English the Dutch words of a default. Values that are
# data — ids, names, texts of records — are marked `.identifier` or `.breakable`, or are the text of
# a record or message, and are not words of the console.
LOOK = """(language) => {
  const problems = [];
  const overflow = document.documentElement.scrollWidth - window.innerWidth;
  if (overflow > 0) problems.push(`page ${overflow}px wider than the window`);
  // Inside a closed fold only its handle shows.
  const folded = element => element.closest('details:not([open])') && !element.closest('summary');
  const shown = element => element.getClientRects().length > 0 && getComputedStyle(element).visibility !== 'hidden' && !folded(element);
  const skipped = 'script, style, select, option, input, textarea, svg, .visually-hidden, [hidden]';
  const hides = value => value === 'hidden' || value === 'clip';
  const named = element => (element.innerText || element.textContent || element.tagName).trim().replace(/\\s+/g, ' ').slice(0, 50);
  for (const element of document.querySelectorAll('body *')) {
    if (element.closest(skipped) || !shown(element)) continue;
    const style = getComputedStyle(element);
    const wide = element.scrollWidth > element.clientWidth + 1, tall = element.scrollHeight > element.clientHeight + 1;
    if ((wide && hides(style.overflowX)) || (tall && hides(style.overflowY))) {
      const ellipsis = style.textOverflow === 'ellipsis' || (style.webkitLineClamp && style.webkitLineClamp !== 'none');
      const titled = (element.getAttribute('title') || '').trim().length > 0;
      if (!(ellipsis && titled)) problems.push(`cut off (${element.scrollWidth}x${element.scrollHeight} in ${element.clientWidth}x${element.clientHeight}, ${element.tagName.toLowerCase()}.${element.className}): ${named(element)}`);
    }
  }
  // A box that scrolls sideways is for a wide table: text beside the table stays in view.
  for (const box of document.querySelectorAll('#content *')) {
    const style = getComputedStyle(box);
    if (!['auto', 'scroll'].includes(style.overflowX) || box.scrollWidth <= box.clientWidth + 1 || !shown(box)) continue;
    const right = box.getBoundingClientRect().left + box.clientWidth;
    for (const text of box.querySelectorAll('p, h1, h2, h3, h4, .console-note, .breadcrumbs')) {
      if (!text.closest('table') && shown(text) && text.getBoundingClientRect().right > right + 1)
        problems.push(`text out of view in a box that scrolls: ${named(text)}`);
    }
  }
  const canvas = document.createElement('canvas').getContext('2d');
  for (const cell of document.querySelectorAll('#content td, #content th')) {
    if (cell.closest(skipped) || !shown(cell)) continue;
    const style = getComputedStyle(cell);
    if (cell.scrollWidth > cell.clientWidth + 1 && style.overflowX !== 'auto' && style.overflowX !== 'scroll')
      problems.push(`cell cut off (${cell.scrollWidth} > ${cell.clientWidth}): ${named(cell)}`);
    if (cell.closest('.breakable')) continue;
    canvas.font = `${style.fontStyle} ${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
    const padding = parseFloat(style.paddingLeft) + parseFloat(style.paddingRight);
    const words = (cell.innerText || '').split(/\\s+/).filter(word => word.length > 1 && word.length < 30);
    for (const word of words) {
      const width = canvas.measureText(style.textTransform === 'uppercase' ? word.toUpperCase() : word).width;
      if (cell.clientWidth - padding + 1 < width) { problems.push(`cell narrower than "${word}"`); break; }
    }
  }
  // Words broken inside: a word whose letters stand on two lines (ids of 25 characters and more
  // in a .breakable value, and preformatted JSON, may break by design).
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const codeWords = /(^|[\\s(:,])([a-z]+\\.[a-z]+(_[a-z]+)*|[a-z]+(_[a-z]+)+|\\[\\s*"|\\{\\s*"|\\[[a-z_]+\\]|\\b(Actor|Agents|Default|with_person|import_memory|true|false|null)\\b)(?=$|[\\s),.:;])/;
  const dutchWords = /(^|[\\s(:])(geen|uit|aan|leeg|Standaard|vereist|betwist|Geheugen[a-z]+)(?=$|[\\s),.:;])/;
  const data = '.identifier, .breakable, .record-text, .thread-item, .tool-run, .audit-details, .truncated, code.value, #site-name, #language-switch, .diff, .memory-versions td';
  let node;
  while ((node = walker.nextNode())) {
    const parent = node.parentElement;
    if (!parent || parent.closest(skipped) || !node.textContent.trim() || !shown(parent)) continue;
    const text = node.textContent;
    const isData = parent.closest(data);
    if (!isData && language === 'nl') {
      const found = text.match(codeWords);
      if (found) problems.push(`code word "${found[2]}" in Dutch: ${text.trim().slice(0, 60)}`);
    }
    if (!isData && language === 'en') {
      const found = text.match(dutchWords);
      if (found) problems.push(`Dutch word "${found[2]}" in English: ${text.trim().slice(0, 60)}`);
    }
    if (parent.closest('pre')) continue;
    const pattern = /\\S+/g;
    let match;
    while ((match = pattern.exec(text))) {
      if (match[0].length < 2 || (match[0].length >= 25 && parent.closest('.breakable, .identifier, .record-text, .truncated'))) continue;
      const range = document.createRange();
      range.setStart(node, match.index);
      range.setEnd(node, match.index + match[0].length);
      const tops = new Set([...range.getClientRects()].filter(rect => rect.width > 0).map(rect => Math.round(rect.top)));
      if (tops.size > 1 && /^[\\p{L}\\p{N}]+$/u.test(match[0].replace(/[-–.,:;!?()"'“”]/g, ''))) {
        const hyphen = /[-–]/.test(match[0]);
        if (!hyphen) problems.push(`word broken inside: "${match[0].slice(0, 40)}"`);
      }
    }
  }
  return problems;
}"""
# The side menu stands beside the page only in a wide window: a few pages are walked there too.
MENU_BESIDE_WIDTH = 1700
MENU_BESIDE_PAGES = ("records", "search")  # the widest list, and the search box's answer
# How many lines the header's parts (name, user's links, language switch) stand on.
HEADER_LINES = """() => {
  const parts = [...document.querySelectorAll('#header > *')].filter(part => part.getClientRects().length)
    .map(part => part.getBoundingClientRect()).sort((a, b) => a.top - b.top);
  let lines = 0, bottom = -Infinity;
  for (const part of parts) { if (part.top >= bottom - 1) { lines += 1; bottom = part.bottom; } else bottom = Math.max(bottom, part.bottom); }
  return lines;
}"""


def switch_changes_checked(index_id: str) -> Callable[[Page, str], Response | None]:
    """The page that shows what the switch's form would change (a POST; set only once confirmed)."""

    def visit(page: Page, base: str) -> Response | None:
        page.goto(f"{base}/console/extraction/extractionswitch/{quote(index_id)}/change/")
        with page.expect_navigation() as navigation:
            page.locator("#switch-settings-form [type=submit]").click()
        page.locator("input[name=confirmed][value='1']").wait_for(state="attached")  # the confirmation, not the form again
        return navigation.value

    return visit


def settings_changes_checked(organisation_id: str) -> Callable[[Page, str], Response | None]:
    """The page that shows what the organisation's settings would become (a POST; set only once confirmed)."""

    def visit(page: Page, base: str) -> Response | None:
        page.goto(f"{base}/console/organisations/organisation/{quote(organisation_id)}/change/")
        page.locator("#id_audit_retention_days").fill("400")
        with page.expect_navigation() as navigation:
            page.locator("#organisation_form [name=_save]").click()
        page.locator("input[name=confirmed][value='1']").wait_for(state="attached")  # the confirmation, not the form again
        return navigation.value

    return visit


# The form a page's own button would send, sent from the page in view (its CSRF token with it): the
# walk looks at the page that answers, without loading the list or form that leads there each time.
POST_FROM_PAGE = """([address, fields]) => {
  const form = document.createElement('form');
  form.method = 'post';
  form.action = address;
  const token = document.querySelector('[name=csrfmiddlewaretoken]').value;
  for (const [name, value] of [['csrfmiddlewaretoken', token], ...fields]) {
    const input = document.createElement('input');
    input.type = 'hidden';
    input.name = name;
    input.value = value;
    form.append(input);
  }
  document.body.append(form);
  form.submit();
}"""


def posted(address: str, fields: list[tuple[str, str]], *, answer: str) -> Callable[[Page, str], Response | None]:
    """The page that answers `fields` posted to `address` (an action on chosen rows, a form checked):
    nothing is done before it is confirmed. `answer` is found on that page, not on the one sent from."""

    def visit(page: Page, base: str) -> Response | None:
        if page.locator("[name=csrfmiddlewaretoken]").count() == 0:
            page.goto(f"{base}/console/")
        with page.expect_navigation() as navigation:
            page.evaluate(POST_FROM_PAGE, [f"{base}{address}", fields])
        page.locator(answer).first.wait_for(state="attached")
        return navigation.value

    return visit


def chosen_for(listing: str, action: str, ids: list[str], *extra: tuple[str, str]) -> Callable[[Page, str], Response | None]:
    """The page after choosing the rows `ids` of a list and `action` on them (with `extra` fields: the
    merge's choice, to reach what it will do)."""
    fields = [("action", action), *(("_selected_action", each) for each in ids), *extra]
    return posted(listing, fields, answer="input[name=post]")


def pages_of(world) -> dict[str, str | Callable[[Page, str], Response | None]]:
    """One page of each kind, by a short name (the screenshot's): an address, or how a browser
    reaches a page that answers a form."""
    organisation = world.tenant.organisation.id
    index = world.tenant.index.id
    record = quote(world.moved.id)
    records = "/console/memory/memoryrecord/"
    webhook = WebhookSubscription.objects.for_organisation(organisation).get()
    event = AuditEvent.objects.for_organisation(organisation).order_by("id").first()
    return {
        "home": "/console/",
        "organisations": "/console/organisations/organisation/",
        "organisation": f"/console/organisations/organisation/{quote(organisation)}/change/",
        "organisation-confirm": settings_changes_checked(organisation),
        "keys": "/console/keys/apikey/",
        "key": f"/console/keys/apikey/{quote(world.key.id)}/change/",
        "stores": "/console/stores/memorystore/",
        "store": f"/console/stores/memorystore/{quote(index)}/change/",
        "records": "/console/memory/memoryrecord/",
        "record": f"/console/memory/memoryrecord/{record}/change/",
        "record-history": f"/console/memory/memoryrecord/{record}/history/",
        "record-delete": f"/console/memory/memoryrecord/{record}/delete/",
        "contested-pair": f"/console/memory/memoryrecord/{quote(world.coffee.id)}/contested/{quote(world.tea.id)}/",
        "persons": "/console/persons/person/",
        "person": f"/console/persons/person/{organisation}/anna/",
        "person-erase": f"/console/persons/person/{organisation}/anna/erase/",
        "threads": "/console/threads/thread/",
        "thread": f"/console/threads/thread/{quote(world.thread_id)}/change/",
        "switches": "/console/extraction/extractionswitch/",
        "switch": f"/console/extraction/extractionswitch/{quote(index)}/change/",
        "switch-confirm": switch_changes_checked(index),
        "records-export-confirm": chosen_for(records, "export_records", [world.moved.id]),
        "records-delete-confirm": chosen_for(records, "delete_records", [world.moved.id]),
        "proposals": "/console/maintenance/proposal/",
        "proposal": f"/console/maintenance/proposal/{quote(world.proposal.pk)}/change/",
        "proposal-change-confirm": posted(
            f"/console/maintenance/proposal/{quote(world.proposal.pk)}/apply-changed/",
            [("text", "Declaraties gaan vóór de 25e naar Financiën."), ("type", "fact"), ("confidence", "1")],
            answer="input[name=confirmed][value='1']",
        ),
        "proposals-decide-confirm": chosen_for("/console/maintenance/proposal/", "apply_proposals", [world.proposal.pk]),
        "records-merge": chosen_for(records, "merge_records", [world.coffee.id, world.tea.id]),
        "records-merge-confirm": chosen_for(
            records, "merge_records", [world.coffee.id, world.tea.id], ("post", "check"), ("kept", world.coffee.id), ("text", "Anna drinkt koffie")
        ),
        "audit": "/console/audit/auditevent/",
        "audit-event": f"/console/audit/auditevent/{quote(event.id)}/change/",
        "webhooks": "/console/webhooks/webhooksubscription/",
        "webhook": f"/console/webhooks/webhooksubscription/{quote(webhook.id)}/change/",
        # The search box's answer: a person and the records holding her name, grouped by kind.
        "search": "/console/search/?q=anna",
        # An unknown object is the console's own 404, in its language (issue 32).
        "missing-record": "/console/memory/memoryrecord/mem_00000000000000000000000000/change/",
        "missing-person": f"/console/persons/person/{organisation}/nobody-at-all/",
    }


@pytest.mark.timeout(900)  # 132 pages with their screenshots; about a minute and a half on an idle machine
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
        page.goto(f"{live_server.url}/console/")  # the language is switched from a page a GET may reach again
        page.locator("#language-switch-select").select_option(language)
        page.locator("#language-switch [type=submit]").click()
        page.wait_for_load_state()
        for width in (*WIDTHS, MENU_BESIDE_WIDTH):
            page.set_viewport_size({"width": width, "height": 900})
            for name, address in pages_of(world).items():
                if (PAGES and name not in PAGES) or (width == MENU_BESIDE_WIDTH and name not in MENU_BESIDE_PAGES):
                    continue
                response = address(page, live_server.url) if callable(address) else page.goto(live_server.url + address)
                where = f"{language} {width} {name}"
                expected = 404 if name.startswith("missing-") else 200
                if response is None or response.status != expected:
                    problems[where] = [f"status {response and response.status}"]
                    continue
                found = page.evaluate(LOOK, language)
                if page.locator("#console-nav #console-search-q").count() != 1:
                    found.append("no side menu with the search box")
                if (lines := page.evaluate(HEADER_LINES)) > 2:
                    found.append(f"the header on {lines} lines")
                if page.evaluate("document.documentElement.lang") != language:
                    found.append(f"in {page.evaluate('document.documentElement.lang')}")
                if found:
                    problems[where] = found
                page.screenshot(path=SCREENSHOTS / f"{language}-{width}-{name}.png", full_page=True)

    assert problems == {}, "\n".join(f"{where}: {found}" for where, found in problems.items())
    missing = {live_server.url + address for name, address in pages_of(world).items() if name.startswith("missing-")}
    assert [error for error in errors if not (error.split(": ")[0] in missing and "status of 404" in error)] == []
    assert sorted(untranslated) == []
