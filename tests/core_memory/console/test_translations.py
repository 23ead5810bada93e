"""The console speaks Dutch completely (R-10.4): a walk over every console page in Dutch, following
every link from the home page, records each string the pages asked to translate that the Dutch
catalogue does not have — ours or Django's. One untranslated string fails the test, naming it."""
from __future__ import annotations

import ast
import gettext
import re
from pathlib import Path
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

import pytest
from django.contrib import admin
from django.contrib.admin.utils import flatten_fieldsets
from django.core.exceptions import FieldDoesNotExist
from django.utils.functional import Promise
from django.utils.translation import trans_real

from tests.core_memory.console.world import build_world

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_password_hashing")]

# Not visited: they change something on a GET-less form, leave the console, or only repeat a page.
SKIPPED = re.compile(r"/console/(logout|password_change|jsi18n|r/)|/i18n/")
MAX_PAGES = 400
# Ids in a console address (the admin quotes "_" as "_5F"): one visit per kind of page, not per object.
IDS = re.compile(r"(mem|thr|key|idx|aud|resp|org|prop)_(?:5F)?[0-9A-Za-z]+")
# Strings the same in Dutch that Django's catalogue does not carry as translations of themselves.
SAME_IN_DUTCH: set[str] = set()


class Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        href = dict(attrs).get("href")
        if tag == "a" and href and not href.startswith(("#", "javascript:", "mailto:")):
            self.links.append(href)


@pytest.fixture
def untranslated(monkeypatch):
    """Every msgid asked for in Dutch that the Dutch catalogue lacks."""
    missing: set[str] = set()
    original_gettext = trans_real.DjangoTranslation.gettext
    original_ngettext = trans_real.DjangoTranslation.ngettext

    def gettext(self, message):
        if self.language() == "nl" and message not in self._catalog and message not in SAME_IN_DUTCH and re.search("[A-Za-z]", message):
            missing.add(message)
        return original_gettext(self, message)

    def ngettext(self, singular, plural, number):
        if self.language() == "nl" and (singular, 0) not in self._catalog:
            missing.add(singular)
        return original_ngettext(self, singular, plural, number)

    monkeypatch.setattr(trans_real.DjangoTranslation, "gettext", gettext)
    monkeypatch.setattr(trans_real.DjangoTranslation, "ngettext", ngettext)
    return missing


def walk(client, start: str = "/console/", read: dict[str, str] | None = None) -> list[str]:
    """Every console page reachable from `start` by GET (one visit per path and set of query names);
    `read`, if given, receives each HTML page's text by address (for a caller that parses them further)."""
    seen: set[tuple[str, tuple[str, ...]]] = set()
    queue, visited = [start], []
    while queue and len(visited) < MAX_PAGES:
        url = queue.pop(0)
        parts = urlsplit(url)
        signature = (IDS.sub(r"\1_", parts.path), tuple(sorted(re.findall(r"([^&=]+)=", parts.query))))
        # One filter at a time: each filter's page is seen, not every combination of them.
        if signature in seen or len(signature[1]) > 1 or not parts.path.startswith("/console/") or SKIPPED.search(parts.path):
            continue
        seen.add(signature)
        response = client.get(url)
        assert response.status_code in (200, 302, 403), (url, response.status_code)
        visited.append(url)
        if response.status_code == 200 and response["Content-Type"].startswith("text/html"):
            parser = Links()
            parser.feed(response.content.decode())
            if read is not None:
                read[url] = response.content.decode()
            queue.extend(urljoin(url, link) for link in parser.links)
    return visited


@pytest.mark.timeout(600)  # every console page, walked; minutes on a busy machine
def test_every_console_page_is_dutch_throughout(console, tenant, fake_model, untranslated):
    """R-10.4: every label, type, action and message through Django's i18n, Dutch committed."""
    world = build_world(tenant, fake_model)
    untranslated.clear()  # the world's own set-up is no page

    visited = walk(console)
    # Pages a link does not reach: a form refused, an erasure's receipt.
    console.post(f"/console/stores/memorystore/{tenant.index.id}/change/", {"injection__rank": "newest"})
    console.post(f"/console/persons/person/{tenant.organisation.id}/carla/erase/")

    assert len(visited) > 40, visited
    for must in ("/threads/thread/thr_", "/persons/person/org_", "/audit/auditevent/aud_", "/erase/", "/history/", "/extraction/extractionswitch/idx_",
                 "/maintenance/proposal/prop_"):
        assert any(must in url for url in visited), must
    print("\n".join(sorted(untranslated)))
    assert sorted(untranslated) == [], sorted(untranslated)


TEMPLATES = Path(__file__).resolve().parents[3] / "templates"
# What is left of a template once tags, variables, comments, markup and translated text are gone.
TEMPLATE_CODE = re.compile(
    r"{%\s*comment\s*%}.*?{%\s*endcomment\s*%}|{%\s*block bodyclass\s*%}.*?{%\s*endblock\s*%}|{%\s*blocktranslate.*?endblocktranslate\s*%}|{%.*?%}|{{.*?}}|{#.*?#}"
    r"|<(script|style)\b.*?</\1>|<[^>]*>|&[a-z]+;|&#\d+;",
    re.S,
)


@pytest.mark.parametrize("template", sorted(TEMPLATES.rglob("*.html")), ids=lambda path: str(path.relative_to(TEMPLATES)))
def test_no_console_template_has_words_outside_translation(template):
    """R-10.4: a word written into one of our templates without {% translate %} would stay English in Dutch."""
    left = TEMPLATE_CODE.sub(" ", template.read_text())

    assert re.findall(r"[A-Za-z]{2,}", left) == []


LOCALE = TEMPLATES.parent / "locale" / "nl" / "LC_MESSAGES"


def po_entries(text: str) -> list[dict]:
    """The .po file's entries as {"flags", "msgctxt"?, "msgid", "msgid_plural"?, "msgstr" | "msgstr[n]"}."""
    entries = []
    for block in text.strip().split("\n\n"):
        entry, current = {"flags": ""}, None
        for line in block.splitlines():
            if line.startswith("#,"):
                entry["flags"] += line
            elif line.startswith("#"):
                continue
            elif line.startswith('"'):
                entry[current] += ast.literal_eval(line)
            else:
                current, _space, value = line.partition(" ")
                entry[current] = ast.literal_eval(value)
        entries.append(entry)
    return [entry for entry in entries if entry.get("msgid")]


def test_the_dutch_catalogue_is_complete_and_compiled():
    """R-10.4: every entry translated (none fuzzy or empty), and the committed .mo is the .po compiled."""
    entries = po_entries((LOCALE / "django.po").read_text())
    with (LOCALE / "django.mo").open("rb") as compiled:
        catalogue = gettext.GNUTranslations(compiled)

    assert [entry["msgid"] for entry in entries if "fuzzy" in entry["flags"]] == []
    for entry in entries:
        key = f"{entry['msgctxt']}\x04{entry['msgid']}" if "msgctxt" in entry else entry["msgid"]
        if "msgid_plural" in entry:
            translations = [entry[f"msgstr[{number}]"] for number in range(2)]
            assert all(translations), entry["msgid"]
            assert [catalogue.ngettext(key, entry["msgid_plural"], count) for count in (1, 2)] == translations, entry["msgid"]
        else:
            assert entry["msgstr"], entry["msgid"]
            assert catalogue.gettext(key) == entry["msgstr"], entry["msgid"]


OUR_APPS = ("organisations", "keys", "persons", "threads", "stores", "memory", "extraction", "audit", "console", "webhooks")
SAME_IN_BOTH = {"id", "index"}  # Dutch too


def test_every_model_field_a_console_page_names_has_a_translated_name(rf, administrator, tenant):
    """R-10.4: a field without a verbose_name gets a label made from its name ("Created at"), which
    no translation catalogue is ever asked for; the walk above cannot see it, so this looks."""
    request = rf.get("/console/")
    request.user = administrator
    untranslated = []
    for model, model_admin in admin.site._registry.items():
        if model._meta.app_label not in OUR_APPS:
            continue
        obj = model._default_manager.first() if model._meta.app_label != "console" else None
        names = [*model_admin.get_list_display(request), *model_admin.get_readonly_fields(request, obj)]
        if type(model_admin).change_view is admin.ModelAdmin.change_view:  # a page of its own is walked above
            names += flatten_fieldsets(model_admin.get_fieldsets(request, obj))
        for name in {name for name in names if isinstance(name, str)}:
            try:
                field = model._meta.get_field(name)
            except FieldDoesNotExist:
                continue
            if name not in SAME_IN_BOTH and not isinstance(field.verbose_name, Promise):
                untranslated.append(f"{model._meta.label}.{name}")

    assert sorted(untranslated) == [], sorted(untranslated)
