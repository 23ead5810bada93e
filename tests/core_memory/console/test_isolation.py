"""The console's isolation matrix (R-10.3, R-12.1, issue 11): what the API's matrix
(tests/test_isolation.py) does for the routes, done for the console's pages.

The victim organisation's administrator walks every console page a link reaches (the world
of tests/core_memory/console/world.py has something on every page). Every page she saw, and
every console URL no link reached (a superuser's pages, an object's history), is then asked
for by each attacker below, and everything she can post to (change, delete and erase pages,
her pages' forms, a list's bulk delete with her objects chosen) is posted to:

- `other_administrator`: the console administrator of another organisation;
- `staff_without_organisation`: a staff user with every console permission but bound to no organisation;
- `not_staff`: a logged-in user who is no staff;
- `inactive_administrator`: an administrator of the victim's organisation whose account was switched off;
- `anonymous`: no session.

Each answer must be a refusal or a page of the attacker's own (never a 5xx, never a redirect
into the victim's objects), carry no canary of the victim (her organisation's name, ids and
texts), and write nothing of the victim's: no row of hers changed, no audit event in her
organisation. Every URL the console registers is asked for (test_every_console_url_is_in_the_matrix),
so a new page cannot be missed.
"""
from __future__ import annotations

import re
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import resolve, reverse

from audit.models import AuditEvent
from core_memory.console.services import console_administrator_create
from core_memory.organisations.models import Organisation
from tests.core_memory.console.test_translations import walk
from tests.core_memory.console.world import build_world
from tests.factories import CONSOLE_PASSWORD, console_client, staff_without_organisation
from tests.test_isolation import writes_so_far

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_password_hashing")]

ATTACKERS = ("other_administrator", "staff_without_organisation", "not_staff", "inactive_administrator", "anonymous")
# Answers an attacker may get: a refusal, a redirect to the login page, or a page of its own.
LOGGED_OUT = ("not_staff", "inactive_administrator", "anonymous")
# Console URLs not asked for: logging in and out (everyone's; test_protection.py), one's own
# password, the translation catalogue (the same for everyone), and the redirect to an object's
# site (there is no site, ConsoleSite).
UNREQUESTED = re.compile(r"^(login|logout|password_change|password_change_done|jsi18n|view_on_site)$")
# Models only a superuser administers; a console administrator is refused their pages.
SUPERUSERS_ONLY = ("auth_", "console_", "django_celery_beat_")
# Tables a request may write whoever asks: the session and the audit log (checked apart, per organisation).
ANYONE_WRITES = {"django_session", "audit_auditevent", "audit_auditchainhead"}


@pytest.fixture
def superuser_objects(db):
    """A group and a schedule of each kind, so that the pages only a superuser administers have an object."""
    from django.contrib.auth.models import Group
    from django_celery_beat.models import ClockedSchedule, CrontabSchedule, IntervalSchedule, PeriodicTask, SolarSchedule
    from django.utils import timezone as clock

    Group.objects.create(name="cnry-group")
    ClockedSchedule.objects.create(clocked_time=clock.now())
    CrontabSchedule.objects.create()
    SolarSchedule.objects.create(event="sunrise", latitude=52, longitude=5)
    PeriodicTask.objects.create(name="cnry-task", task="x", interval=IntervalSchedule.objects.create(every=1, period="days"))


@pytest.fixture
def attackers(tenant, other_tenant):
    """One client per attacker."""
    users = get_user_model().objects
    other = console_administrator_create(organisation=other_tenant.organisation, username="otto", password=CONSOLE_PASSWORD).user
    inactive = console_administrator_create(organisation=tenant.organisation, username="ina", password=CONSOLE_PASSWORD).user
    users.filter(pk=inactive.pk).update(is_active=False)
    inactive.refresh_from_db()
    plain = users.create_user(username="plain", password=CONSOLE_PASSWORD, is_staff=False)
    return {
        "other_administrator": console_client(other),
        "staff_without_organisation": console_client(staff_without_organisation(with_permissions=True)),
        "not_staff": console_client(plain),
        "inactive_administrator": console_client(inactive),
        "anonymous": Client(),
    }


def canaries_of(world, tenant) -> set[str]:
    ids = {
        tenant.organisation.id, tenant.index.id, tenant.key.id, world.key.id, world.coffee.id, world.tea.id, world.moved.id, world.old.id,
        world.thread_id, world.response_id, world.proposal.id,
    }
    texts = {"cnry-organisation", "Anna drinkt koffie zwart", "Anna woont in Utrecht", "Declaraties gaan voor de 25e", "Offerte sturen aan Acme"}
    return ids | texts


class Forms(HTMLParser):
    """The addresses a page's forms post to."""

    def __init__(self):
        super().__init__()
        self.actions: list[str] = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "form" and (attributes.get("method") or "").lower() == "post":
            self.actions.append(attributes.get("action") or "")


def form_actions(url: str, page: str | None) -> list[str]:
    """Where the forms of the page at `url` (its HTML as her walk read it; None if it was no HTML
    page) post to (the console's own, not the language switch)."""
    if page is None:
        return []
    parser = Forms()
    parser.feed(page)
    addresses = (urljoin(url, action) if action else url for action in parser.actions)
    return [address for address in addresses if urlsplit(address).path.startswith("/console/") and not urlsplit(address).query]


def reach(console) -> tuple[list[str], list[str]]:
    """What her administrator reaches: every page a link leads to, and every address she can post
    to (a change, delete or erase page, or a page's form)."""
    read: dict[str, str] = {}
    pages = walk(console, read=read)
    posted = {url for url in pages if re.search(r"/(change|delete|erase)/$", url)} | {action for url in pages for action in form_actions(url, read.get(url))}
    posted = {url for url in posted if not UNREQUESTED.match(resolve(urlsplit(url).path).url_name)}
    # Adding is every administrator's own business; a list's form is posted to with her objects chosen.
    posted = {url for url in posted if not url.endswith("/add/")}
    return pages, sorted(posted)


def post_body(url: str, canaries: set[str]) -> dict:
    """A confirmed form; on a list, its bulk delete with every id of the victim's chosen."""
    body = {"post": "yes", "name": "taken over"}
    if resolve(urlsplit(url).path).url_name.endswith("_changelist"):
        body |= {"action": "delete_selected", "_selected_action": sorted(canaries), "index": "0"}
    return body


def _allowed(attacker: str, method: str, url: str, response, canaries: set[str]) -> bool:
    if response.status_code >= 500:
        return False
    if attacker in LOGGED_OUT:
        return response.status_code == 302 and urlsplit(response["Location"]).path == "/console/login/"
    # A staff user: her own home and lists (200; empty without an organisation, 403 without
    # permission); the victim's objects are a 404 to another organisation's administrator, as a
    # missing one is, and refused without an organisation; a superuser's pages a 403;
    # what she posts to her own list (a bulk action with nothing chosen) leads back to it.
    if _is_victims_object(url, canaries):
        return response.status_code in ((404,) if attacker == "other_administrator" else (403, 404))
    if is_superusers(url):
        return response.status_code == 403
    if response.status_code == 302:
        return urlsplit(response["Location"]).path == urlsplit(url).path
    return response.status_code in (200, 403, 404)


def _is_victims_object(url: str, canaries: set[str]) -> bool:
    path = urlsplit(url).path
    return any(canary in path or canary.replace("_", "_5F") in path for canary in canaries)


@pytest.mark.timeout(600)  # every console page, walked; minutes on a busy machine
def test_no_console_page_shows_or_changes_another_organisations_data(console, tenant, other_tenant, attackers, superuser_objects, fake_model):
    """R-10.3, R-12.1, issue 11: every page the victim's administrator sees, asked for and posted
    to by every attacker."""
    Organisation.objects.filter(pk=tenant.organisation.pk).update(name="cnry-organisation")
    world = build_world(tenant, fake_model)
    canaries = canaries_of(world, tenant)
    pages, posted = reach(console)
    others = unlinked(pages + posted, tenant.organisation.id)
    victim = tenant.organisation.id

    failures, tried = [], 0
    # What was written so far, counted again after each request (nothing is written in between).
    writes, events = writes_so_far(), AuditEvent.objects.for_organisation(victim).count()
    for attacker, client in attackers.items():
        for method, url in [("GET", url) for url in pages + others] + [("POST", url) for url in posted]:
            response = client.get(url) if method == "GET" else client.post(url, post_body(url, canaries))
            tried += 1
            content = response.content.decode(errors="replace")
            if not _allowed(attacker, method, url, response, canaries):
                failures.append(f"{attacker} {method} {url}: {response.status_code} {response.get('Location', '')}")
            leaked = sorted(canary for canary in canaries if canary in content and canary not in url)
            if leaked:
                failures.append(f"{attacker} {method} {url}: leaked {leaked}")
            writes_before, events_before = writes, events
            writes, events = writes_so_far(), AuditEvent.objects.for_organisation(victim).count()
            written = {table for table, count in writes.items() if count != writes_before.get(table, 0)} - ANYONE_WRITES
            if written or events != events_before:
                failures.append(f"{attacker} {method} {url}: wrote {sorted(written)} or an event of the victim's")

    assert len(pages) > 40 and posted, (pages, posted)
    # Not even her own administrator reaches the superuser's pages.
    failures += [f"owner GET {url}: {status}" for url in others if is_superusers(url) and (status := console.get(url).status_code) != 403]
    assert tried == len(attackers) * (len(pages) + len(others) + len(posted))
    assert not failures, "\n".join(failures)


def console_urls() -> dict[str, object]:
    """Every URL the console's admin site registers, by name, with its pattern."""
    from django.contrib import admin

    found = {}

    def collect(patterns):
        for pattern in patterns:
            if hasattr(pattern, "url_patterns"):
                collect(pattern.url_patterns)
            elif pattern.name:
                found[pattern.name] = pattern

    collect(admin.site.get_urls())
    return found


def unlinked(reached: list[str], organisation_id: str) -> list[str]:
    """An address for every console URL her walk did not reach: pages of models only a superuser
    administers (SUPERUSERS_ONLY: users, console administrators, schedules), adding or deleting what
    the console never adds or deletes (audit events), and pages no link leads to (an object's
    history). An object page names her organisation's object of the model, else the model's first."""
    from django.contrib import admin

    names = {resolve(urlsplit(url).path).url_name for url in reached}
    models = {f"{model._meta.app_label}_{model._meta.model_name}_": model for model in admin.site._registry}
    addresses = []
    for name, pattern in sorted(console_urls().items()):
        if name in names or UNREQUESTED.match(name):
            continue
        if "<" not in str(pattern.pattern) and "(?P" not in str(pattern.pattern):
            addresses.append(reverse(f"admin:{name}"))
            continue
        model = next(model for prefix, model in models.items() if name.startswith(prefix))
        rows = model._default_manager.order_by("pk")
        if any(field.name == "organisation" for field in model._meta.fields):
            rows = rows.filter(organisation_id=organisation_id)
        first = rows.values_list("pk", flat=True).first()
        if first is not None:
            addresses.append(reverse(f"admin:{name}", args=[first]))
    return addresses


def is_superusers(url: str) -> bool:
    return resolve(urlsplit(url).path).url_name.startswith(SUPERUSERS_ONLY)


@pytest.mark.timeout(600)  # every console page, walked; minutes on a busy machine
def test_every_console_url_is_in_the_matrix(console, tenant, superuser_objects, fake_model):
    """A console page added later is in the matrix without an entry: her walk reaches it, or it is
    asked for as a page not hers; only UNREQUESTED names stay out, each with why."""
    build_world(tenant, fake_model)
    pages, posted = reach(console)
    covered = {resolve(urlsplit(url).path).url_name for url in pages + posted + unlinked(pages + posted, tenant.organisation.id)}

    assert sorted(set(console_urls()) - covered - {name for name in console_urls() if UNREQUESTED.match(name)}) == []
    assert "auth_user_changelist" in covered and "memory_memoryrecord_change" in covered
