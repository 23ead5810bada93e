"""Extraction switches in the console (extraction.admin, R-8.5, R-8.6, R-10.3; issue 13 item 5):
state, windows, last run, the most common error explained, the windows that failed; re-sending as
one of her keys through the switch service. Scoped and audited."""
from __future__ import annotations

import pytest
from django.contrib.admin.utils import quote

from audit.models import AuditEvent
from core_memory.base.callers import Caller
from core_memory.keys.services import key_revoke
from extraction.models import ExtractionSwitch, ExtractionWindow
from tests.extraction.builders import conversation, switch_put
from tests.factories import make_key
from tests.fake_model import completion

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_password_hashing")]


def switch_url(index_id: str, page: str = "change") -> str:
    return f"/console/extraction/extractionswitch/{quote(index_id)}/{page}/"


def test_the_switch_page_shows_its_state_windows_last_run_and_the_error_explained(console, tenant, switch, fake_model, run_extraction):
    """R-8.5: state, windows by status, last run and error_code, with a plain explanation."""
    conversation(organisation=tenant.organisation, key=tenant.key, messages=["Ik heet Anna.", "Hallo Anna."])
    fake_model.default = completion("dit is geen JSON")
    run_extraction()

    response = console.get(switch_url(tenant.index.id))

    assert response.status_code == 200
    status = response.context["status"]
    assert (status.state, status.windows["failed"], status.error_code) == ("active", 1, "invalid_model_output")
    assert status.last_run["errors"] == 1
    page = response.content.decode()
    assert "Het model antwoordde iets dat niet de verwachte JSON is" in page
    assert [entry["window"].error_code for entry in response.context["failed"]] == ["invalid_model_output"]
    event = AuditEvent.objects.get(action="memory.console_read", details__page="extraction")
    assert (event.actor, event.target, event.details["error_code"]) == ("console:anna", tenant.index.id, "invalid_model_output")


def test_re_sending_as_another_key_mends_a_lost_author_and_is_audited(console, tenant, switch):
    """R-8.6: a revoked author stops the switch; sent again as a usable key it runs, as that key."""
    author = tenant.key
    other, _secret = make_key(tenant.organisation, name="tweede")
    key_revoke(caller=Caller.system(organisation_id=author.organisation_id, actor="test"), key_id=author.id)
    assert console.get(switch_url(tenant.index.id)).context["status"].state == "author_unavailable"

    response = console.post(switch_url(tenant.index.id, "resend"), {"key": other.id}, follow=True)

    assert response.context["status"].state == "active"
    assert ExtractionSwitch.objects.get(pk=tenant.index.id).author_key_id == other.id
    event = AuditEvent.objects.filter(action="extraction.switch_set").latest("id")
    assert (event.actor, event.target) == ("console:anna", tenant.index.id)


def test_only_her_keys_that_may_set_the_switch_are_offered(console, tenant, other_tenant, switch):
    """R-8.1: `threads`, `memory` and the write right; never another organisation's key."""
    make_key(tenant.organisation, name="lezer", write=())
    make_key(tenant.organisation, name="zonder threads", capabilities=("knowledge", "memory"))
    foreign = other_tenant.key

    form = console.get(switch_url(tenant.index.id)).context["form"]
    refused = console.post(switch_url(tenant.index.id, "resend"), {"key": foreign.id})

    assert [label for _value, label in form.fields["key"].choices] == [f"owner ({tenant.key.id})"]
    assert refused.status_code == 200 and refused.context["form"].errors["key"]
    assert not AuditEvent.objects.filter(action="extraction.switch_set", actor="console:anna").exists()


def test_another_organisations_switch_is_a_404_and_nothing_is_read_or_written(console, other_tenant, fake_model):
    assert switch_put(other_tenant.client(), other_tenant.index.id).status_code == 200
    events = AuditEvent.objects.count()

    assert console.get(switch_url(other_tenant.index.id)).status_code == 404
    assert console.post(switch_url(other_tenant.index.id, "resend"), {"key": other_tenant.key.id}).status_code == 404
    assert AuditEvent.objects.count() == events
    assert ExtractionWindow.objects.count() == 0


def test_the_home_page_shows_each_switchs_health(console, tenant, switch):
    figures = console.get("/console/").context["dashboard"]

    assert [(entry.name, entry.state, entry.failed_windows) for entry in figures.switches] == [("memory", "active", 0)]


def switch_form(console, index_id: str) -> dict:
    """The switch page's settings form as the browser would post it, unchanged."""
    form = console.get(switch_url(index_id)).context["settings_form"]
    data = {}
    for name, field in form.fields.items():
        value = form.initial.get(name, field.initial)
        if isinstance(value, bool):
            if value:
                data[name] = "on"
        elif value is not None:
            data[name] = value
    return data


def test_the_switch_is_turned_off_and_its_instructions_changed_after_a_confirmation_audited(console, tenant, switch):
    """Issue 24: the console sets the switch through the API's serializer and service, after a page
    that shows what changes; nothing is written before it is confirmed."""
    data = switch_form(console, tenant.index.id)
    data.pop("switch__enabled")
    data["switch__instructions"] = "Let op verhuizingen."

    confirm = console.post(switch_url(tenant.index.id, "set"), data)

    assert confirm.status_code == 200
    assert ("aan", "uit") in [(before, after) for _label, before, after in confirm.context["changes"]]
    assert ExtractionSwitch.objects.get(pk=tenant.index.id).enabled is True
    assert not AuditEvent.objects.filter(action="extraction.switch_set", actor="console:anna").exists()

    done = console.post(switch_url(tenant.index.id, "set"), {**data, "confirmed": "1"}, follow=True)

    stored = ExtractionSwitch.objects.get(pk=tenant.index.id)
    assert (stored.enabled, stored.instructions, stored.model) == (False, "Let op verhuizingen.", "fake-chat")
    assert done.context["status"].state == "off"
    event = AuditEvent.objects.filter(action="extraction.switch_set").latest("id")
    assert (event.actor, event.target) == ("console:anna", tenant.index.id)


def test_a_setting_the_api_refuses_is_refused_on_its_field_and_nothing_is_written(console, tenant, switch):
    """Issue 24: the API's validation — a schedule of 0 minutes — names the field in the form."""
    data = {**switch_form(console, tenant.index.id), "switch__schedule_minutes": "0", "confirmed": "1"}
    events = AuditEvent.objects.filter(action="extraction.switch_set").count()

    response = console.post(switch_url(tenant.index.id, "set"), data)

    assert response.status_code == 200
    assert "switch__schedule_minutes" in response.context["settings_form"].errors
    assert ExtractionSwitch.objects.get(pk=tenant.index.id).schedule_minutes == 60
    assert AuditEvent.objects.filter(action="extraction.switch_set").count() == events


def test_a_switch_turned_on_without_a_model_is_refused_in_dutch_on_the_model(console, tenant, switch):
    """Issue 24: the serializer's own words reached the Dutch console in English."""
    data = {**switch_form(console, tenant.index.id), "switch__model": ""}

    response = console.post(switch_url(tenant.index.id, "set"), data)

    assert response.context["settings_form"].errors["switch__model"] == ["Dit veld is verplicht als de schakelaar aan staat."]
    assert ExtractionSwitch.objects.get(pk=tenant.index.id).model == "fake-chat"


def test_a_rule_of_the_switchs_service_is_told_in_dutch(console, tenant, switch):
    """Issue 24: session lessons without episodes, refused by the service after the confirmation."""
    data = {**switch_form(console, tenant.index.id), "switch__lessons": "on", "confirmed": "1"}
    data.pop("switch__episodes", None)

    response = console.post(switch_url(tenant.index.id, "set"), data, follow=True)

    told = [str(message) for message in response.context["messages"]]
    assert told == ["lessons: Sessielessen vragen `episodes`: ze worden in dezelfde lezing van een sessie genoteerd."]
    assert ExtractionSwitch.objects.get(pk=tenant.index.id).lessons is False


def test_the_switch_list_shows_each_switchs_state_and_most_common_error(console, tenant, switch, fake_model, run_extraction):
    conversation(organisation=tenant.organisation, key=tenant.key, messages=["Ik heet Anna.", "Hallo Anna."])
    fake_model.default = completion("dit is geen JSON")
    run_extraction()

    page = console.get("/console/extraction/extractionswitch/").content.decode()

    assert 'class="state-badge state-active">actief<' in page
    assert ">invalid_model_output</code>" in page


def test_extraction_is_turned_on_for_a_store_that_has_no_switch_yet_from_its_page(console, tenant, fake_model):
    """Issue 32: a store without a switch could only be switched on through the API. Its store page
    links its switch page; there, set on with a model, confirmed, through the API's serializer and
    service, audited."""
    store_page = console.get(f"/console/stores/memorystore/{quote(tenant.index.id)}/change/").content.decode()
    assert f'href="{switch_url(tenant.index.id)}" id="extraction-link"' in store_page
    page = console.get(switch_url(tenant.index.id))
    assert page.status_code == 200 and page.context["not_set_yet"] is True
    assert not ExtractionSwitch.objects.filter(pk=tenant.index.id).exists()
    data = {**switch_form(console, tenant.index.id), "switch__enabled": "on", "switch__model": "fake-chat", "switch__types": "fact, preference", "key": tenant.key.id}

    confirm = console.post(switch_url(tenant.index.id, "set"), data)

    assert confirm.context.get("settings_form") is None or not confirm.context["settings_form"].errors, confirm.context["settings_form"].errors
    assert confirm.status_code == 200 and ("uit", "aan") in [(before, after) for _label, before, after in confirm.context["changes"]]
    assert not ExtractionSwitch.objects.filter(pk=tenant.index.id).exists()

    done = console.post(switch_url(tenant.index.id, "set"), {**data, "confirmed": "1"}, follow=True)

    stored = ExtractionSwitch.objects.get(pk=tenant.index.id)
    assert (stored.enabled, stored.model, stored.author_key_id) == (True, "fake-chat", tenant.key.id)
    assert done.context["status"].state == "active"
    event = AuditEvent.objects.filter(action="extraction.switch_set").latest("id")
    assert (event.actor, event.target) == ("console:anna", tenant.index.id)


def test_a_store_of_another_organisation_has_no_switch_page_to_set(console, other_tenant, fake_model):
    response = console.get(switch_url(other_tenant.index.id))

    assert response.status_code == 404
    assert console.post(switch_url(other_tenant.index.id, "set"), {"switch__enabled": "on", "confirmed": "1"}).status_code == 404
    assert not ExtractionSwitch.objects.filter(pk=other_tenant.index.id).exists()


def test_a_setting_the_apis_serializer_refuses_is_explained_in_the_pages_language(console, tenant, fake_model):
    """Issue 32: a refusal Django REST framework's Dutch catalogue lacks (a list too short) was shown
    in English on a Dutch page; the console's catalogue has it."""
    data = {**switch_form(console, tenant.index.id), "switch__enabled": "on", "switch__model": "fake-chat", "switch__types": "", "key": tenant.key.id}

    page = console.post(switch_url(tenant.index.id, "set"), data)

    assert page.context["settings_form"].errors["switch__types"] == ["Zorg ervoor dat dit veld minstens 1 elementen bevat."]
    assert not ExtractionSwitch.objects.filter(pk=tenant.index.id).exists()
