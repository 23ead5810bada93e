"""The switch route and the connector route (R-8.1, R-8.2, R-8.5–R-8.7, R-5.3, R-2.7)."""
from datetime import timedelta

import pytest
from django.utils import timezone

from audit.models import AuditEvent
from core_memory.agents.models import Agent
from core_memory.base.callers import Caller
from core_memory.keys.models import KEY_CAPABILITIES, ApiKey, KeyTrailEntry
from core_memory.keys.services import key_delete, key_revoke
from core_memory.threads.services import thread_create
from extraction.models import ExtractionConnector, ExtractionSwitch, ExtractionWindow
from extraction.selectors import switch_find, switch_state
from stores.services import index_delete
from tests.extraction.builders import switch_put
from tests.factories import client_for, make_index, make_key

pytestmark = pytest.mark.django_db

DEFAULT_TYPES = ["fact", "preference", "commitment", "behaviour"]


def url(index_id: str) -> str:
    return f"/v1/memory/stores/{index_id}/extraction"


def written() -> tuple:
    """What a refused PUT must leave as it was."""
    return (
        sorted(ExtractionSwitch.objects.values_list("index_id", "enabled", "model", "types", "author_key_id")),
        ExtractionConnector.objects.count(),
        AuditEvent.objects.filter(action="extraction.switch_set").count(),
    )


def make_agent(client, name="billing-desk") -> str:
    response = client.post("/v1/agents", {"name": name, "model": "fake-chat"}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()["id"]


def test_a_switch_sent_with_only_enabled_and_model_gets_every_default(tenant, fake_model):
    """R-8.1: types default to the four, threads to with_person; R-8.5's status fields; R-8.7's connector."""
    response = switch_put(tenant.client(), tenant.index.id)

    assert response.status_code == 200
    body = response.json()
    connector_id = ExtractionConnector.objects.get().id
    assert body == {
        "index_id": tenant.index.id,
        "enabled": True,
        "model": "fake-chat",
        "instructions": "",
        "types": DEFAULT_TYPES,
        "schedule_minutes": 60,
        "threads": "with_person",
        "episodes": False,
        "lessons": False,
        "filters": {"key_ids": [], "agent_ids": []},
        "connector_id": connector_id,
        "key_id": tenant.key.id,
        "state": "active",
        "last_run": None,
        "windows": {"ready": 0, "failed": 0, "queued": 0, "parked": 0},
        "error_code": None,
        "set_at": body["set_at"],
    }
    assert tenant.client().get(url(tenant.index.id)).json() == body


def test_every_field_sent_is_kept_and_the_change_is_audited(tenant, fake_model):
    """R-8.1, R-11.2: `extraction.switch_set`."""
    agent_id = make_agent(tenant.client())
    body = {
        "instructions": "Onthoud alleen wat over facturen gaat.",
        "types": ["fact", "klant_voorkeur"],
        "schedule_minutes": 15,
        "threads": "all",
        "episodes": True,
        "lessons": True,
        "filters": {"key_ids": [tenant.key.id], "agent_ids": [agent_id]},
    }

    answer = switch_put(tenant.client(), tenant.index.id, **body).json()

    assert {name: answer[name] for name in body} == body
    event = AuditEvent.objects.get(action="extraction.switch_set")
    assert (event.actor, event.target) == (tenant.key.id, tenant.index.id)
    assert event.details == {
        "enabled": True,
        "model": "fake-chat",
        "types": ["fact", "klant_voorkeur"],
        "threads": "all",
        "episodes": True,
        "lessons": True,
        "schedule_minutes": 15,
        "filters": {"key_ids": [tenant.key.id], "agent_ids": [agent_id]},
        "connector_id": answer["connector_id"],
        "requeued_windows": 0,
    }


def test_get_of_a_store_without_a_switch_is_a_404(tenant):
    response = tenant.client().get(url(tenant.index.id))

    assert response.status_code == 404
    assert response.json()["error"]["message"] == "This store has no extraction switch."


def test_a_switch_stored_before_the_threads_field_existed_shows_all(tenant, fake_model):
    """R-8.5."""
    switch_put(tenant.client(), tenant.index.id)
    ExtractionSwitch.objects.update(threads=None)

    assert tenant.client().get(url(tenant.index.id)).json()["threads"] == "all"


def test_a_put_that_leaves_threads_out_reads_with_person_again(tenant, fake_model):
    """R-8.1: `with_person` is the default of a PUT that omits it, also over a stored `all`."""
    switch_put(tenant.client(), tenant.index.id, threads="all")

    assert switch_put(tenant.client(), tenant.index.id).json()["threads"] == "with_person"


def test_enabled_false_stops_the_switch_and_keeps_what_it_does_not_name(tenant, fake_model):
    """R-8.1: stopping changes nothing else; the store keeps the switch's types (R-5.3)."""
    switch_put(tenant.client(), tenant.index.id, types=["klant_feit"], schedule_minutes=5)

    response = tenant.client().put(url(tenant.index.id), {"enabled": False}, format="json")

    assert response.status_code == 200
    body = response.json()
    assert (body["enabled"], body["state"], body["model"], body["types"], body["schedule_minutes"]) == (
        False,
        "off",
        "fake-chat",
        ["klant_feit"],
        5,
    )


def test_the_sending_key_becomes_the_key_extraction_runs_under(tenant, fake_model):
    """R-8.1."""
    switch_put(tenant.client(), tenant.index.id)
    client, other_key = tenant.key_client()

    assert switch_put(client, tenant.index.id).json()["key_id"] == other_key.id
    assert ExtractionSwitch.objects.get().author_key_id == other_key.id


# --- and bad input -------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"model": "not-offered"}, "model"),
        ({"lessons": True}, "lessons"),
        ({"lessons": True, "episodes": False}, "lessons"),
        ({"types": ["fact", "episode"]}, "types[1]"),
        ({"types": ["lesson"]}, "types[0]"),
        ({"filters": {"agent_ids": ["agt_unknown"]}}, "filters.agent_ids[0]"),
        ({"filters": {"key_ids": ["key_never_issued"]}}, "filters.key_ids[0]"),
    ],
)
def test_the_unprocessable_switches_of_r_8_2_are_422s_naming_the_field_and_write_nothing(tenant, fake_model, body, param):
    before = written()

    response = switch_put(tenant.client(), tenant.index.id, **body)

    assert response.status_code == 422, response.json()
    assert response.json()["error"]["param"] == param
    assert written() == before


def test_an_agent_of_another_organisation_is_a_422_on_its_position(tenant, other_tenant, fake_model):
    own = make_agent(tenant.client())
    foreign = make_agent(other_tenant.client())

    response = switch_put(tenant.client(), tenant.index.id, filters={"agent_ids": [own, foreign]})

    assert response.status_code == 422
    assert response.json()["error"]["param"] == "filters.agent_ids[1]"


def test_revoked_expired_and_recently_deleted_keys_are_accepted_as_filters(tenant, fake_model):
    """R-8.2: their conversations are still the organisation's; a deleted key is known from the trail (R-3.5)."""
    revoked, _ = make_key(tenant.organisation, name="revoked")
    key_revoke(caller=Caller.system(organisation_id=revoked.organisation_id, actor="test"), key_id=revoked.id)
    expired, _ = make_key(tenant.organisation, name="expired")
    ApiKey.objects.filter(pk=expired.pk).update(expires_at=timezone.now() - timedelta(days=1))
    deleted, _ = make_key(tenant.organisation, name="deleted")
    deleted_id = deleted.id
    key_delete(caller=Caller.system(organisation_id=deleted.organisation_id, actor="test"), key_id=deleted.id)

    response = switch_put(tenant.client(), tenant.index.id, filters={"key_ids": [revoked.id, expired.id, deleted_id]})

    assert response.status_code == 200, response.json()
    assert response.json()["filters"]["key_ids"] == [revoked.id, expired.id, deleted_id]


def test_a_key_deleted_longer_ago_than_the_trail_is_kept_counts_as_never_issued(tenant, fake_model):
    """R-8.2, R-3.5."""
    deleted, _ = make_key(tenant.organisation, name="deleted")
    deleted_id = deleted.id
    key_delete(caller=Caller.system(organisation_id=deleted.organisation_id, actor="test"), key_id=deleted.id)
    days = tenant.organisation.audit_retention_days + 1
    KeyTrailEntry.objects.filter(key_id=deleted_id).update(at=timezone.now() - timedelta(days=days))

    response = switch_put(tenant.client(), tenant.index.id, filters={"key_ids": [deleted_id]})

    assert (response.status_code, response.json()["error"]["param"]) == (422, "filters.key_ids[0]")


def test_a_retried_put_with_the_same_idempotency_key_answers_the_first_and_writes_nothing(tenant, fake_model):
    """R-2.6."""
    first = switch_put(tenant.client(), tenant.index.id, HTTP_IDEMPOTENCY_KEY="switch-1")
    again = switch_put(tenant.client(), tenant.index.id, HTTP_IDEMPOTENCY_KEY="switch-1")

    assert again.status_code == 200
    assert again.json() == first.json()
    assert again["Idempotent-Replayed"] == "true"
    assert AuditEvent.objects.filter(action="extraction.switch_set").count() == 1


def test_ids_the_switch_already_had_are_not_checked_again(tenant, fake_model):
    """R-8.2: an agent gone since is kept; a new unknown id is still refused."""
    agent_id = make_agent(tenant.client())
    switch_put(tenant.client(), tenant.index.id, filters={"agent_ids": [agent_id]})
    Agent.objects.filter(pk=agent_id).update(deleted_at=timezone.now())

    kept = switch_put(tenant.client(), tenant.index.id, filters={"agent_ids": [agent_id]})
    refused = switch_put(tenant.client(), tenant.index.id, filters={"agent_ids": [agent_id, "agt_new"]})

    assert kept.status_code == 200
    assert refused.status_code == 422
    assert refused.json()["error"]["param"] == "filters.agent_ids[1]"


def test_filter_ids_are_not_checked_when_the_switch_is_sent_disabled(tenant, fake_model):
    """The original: ids are refused "wanneer je de extractie aanzet" (docs/decisions.md)."""
    response = tenant.client().put(
        url(tenant.index.id), {"enabled": False, "filters": {"agent_ids": ["agt_unknown"]}}, format="json"
    )

    assert response.status_code == 200
    assert response.json()["state"] == "off"


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"enabled": True, "model": "fake-chat", "colour": "blue"}, "colour"),
        ({"enabled": True, "model": "fake-chat", "filters": {"key_ids": [], "tags": []}}, "filters.tags"),
        ({"model": "fake-chat"}, "enabled"),
        ({"enabled": True}, "model"),
        ({"enabled": "yes", "model": "fake-chat"}, "enabled"),
        ({"enabled": True, "model": 7}, "model"),
        ({"enabled": True, "model": "fake-chat", "schedule_minutes": "60"}, "schedule_minutes"),
        ({"enabled": True, "model": "fake-chat", "schedule_minutes": 0}, "schedule_minutes"),
        ({"enabled": True, "model": "fake-chat", "schedule_minutes": 10081}, "schedule_minutes"),
        ({"enabled": True, "model": "fake-chat", "schedule_minutes": 1.5}, "schedule_minutes"),
        ({"enabled": True, "model": "fake-chat", "types": "fact"}, "types"),
        ({"enabled": True, "model": "fake-chat", "types": []}, "types"),
        ({"enabled": True, "model": "fake-chat", "types": ["Fact"]}, "types[0]"),
        ({"enabled": True, "model": "fake-chat", "types": ["fact", 3]}, "types[1]"),
        ({"enabled": True, "model": "fake-chat", "threads": "some"}, "threads"),
        ({"enabled": True, "model": "fake-chat", "episodes": "true"}, "episodes"),
        ({"enabled": True, "model": "fake-chat", "instructions": None}, "instructions"),
        ({"enabled": True, "model": "fake-chat", "filters": {"key_ids": "key_x"}}, "filters.key_ids"),
        ({"enabled": True, "model": "fake-chat", "filters": {"agent_ids": [None]}}, "filters.agent_ids[0]"),
        ({"enabled": True, "model": "fake-chat", "filters": []}, "filters"),
    ],
)
def test_bad_input_is_a_400_naming_the_field_and_writes_nothing(tenant, fake_model, body, param):
    """R-2.3, R-12.3: unknown fields and wrong types."""
    before = written()

    response = tenant.client().put(url(tenant.index.id), body, format="json")

    assert response.status_code == 400, response.json()
    assert response.json()["error"]["param"] == param
    assert written() == before


def test_a_body_that_is_not_an_object_is_a_400(tenant, fake_model):
    before = written()

    response = tenant.client().put(url(tenant.index.id), ["enabled"], format="json")

    assert response.status_code == 400
    assert written() == before


# --- Who may --------------------------------------------------------------------------


@pytest.mark.parametrize("enabled", [True, False])
def test_setting_the_switch_needs_threads_also_to_switch_it_off(tenant, fake_model, enabled):
    """R-8.1, R-2.7."""
    switch_put(tenant.client(), tenant.index.id)
    before = written()
    client, _ = tenant.key_client(capabilities=[c for c in KEY_CAPABILITIES if c != "threads"])

    response = switch_put(client, tenant.index.id, enabled=enabled)

    assert response.status_code == 403
    assert response.json()["error"]["message"] == "This key lacks the capability 'threads'."
    assert written() == before


def test_setting_the_switch_needs_memory(tenant, fake_model):
    before = written()
    client, _ = tenant.key_client(capabilities=["knowledge", "threads"])

    response = switch_put(client, tenant.index.id)

    assert response.status_code == 403
    assert written() == before


def test_setting_the_switch_needs_the_policys_write_right(tenant, fake_model):
    before = written()
    client, _ = tenant.key_client(read=[tenant.index.id], write=[])

    response = switch_put(client, tenant.index.id)

    assert response.status_code == 403
    assert written() == before


@pytest.mark.parametrize("who", ["policy without the index", "other organisation", "deleted index"])
def test_an_unavailable_index_is_a_404(tenant, other_tenant, fake_model, who):
    """R-4.2, R-2.5."""
    index = tenant.index
    client = tenant.client()
    if who == "policy without the index":
        client, _ = tenant.key_client(read=[], write=[make_index(tenant.organisation).id])
    elif who == "other organisation":
        client = other_tenant.client()
    else:
        index_delete(caller=Caller.system(organisation_id=index.organisation_id, actor="test"), index=index)
    before = written()

    assert switch_put(client, index.id).status_code == 404
    assert client.get(url(index.id)).status_code == 404
    assert written() == before


def test_anonymous_is_a_401_and_a_subject_token_a_403(tenant, fake_model):
    before = written()
    token = tenant.client().post("/v1/subject-tokens", {"subject": "anna"}, format="json").json()["token"]

    assert switch_put(client_for(None), tenant.index.id).status_code == 401
    assert switch_put(client_for(token), tenant.index.id).status_code == 403
    assert written() == before


def test_reading_the_switch_needs_memory_and_the_read_right(tenant, fake_model):
    switch_put(tenant.client(), tenant.index.id)
    without_memory, _ = tenant.key_client(capabilities=["knowledge", "threads"])
    write_only, _ = tenant.key_client(read=[], write=[tenant.index.id])
    reader, _ = tenant.key_client(capabilities=["knowledge", "memory"], read=[tenant.index.id], write=[])

    assert without_memory.get(url(tenant.index.id)).status_code == 403
    assert write_only.get(url(tenant.index.id)).status_code == 403
    assert reader.get(url(tenant.index.id)).status_code == 200


# --- State (R-8.6) --------------------------------------------------------------------


@pytest.mark.parametrize("how", ["revoked", "expired", "deleted"])
def test_a_switch_whose_key_is_gone_is_author_unavailable_until_it_is_sent_again(tenant, fake_model, how):
    client, author = tenant.key_client(name="author")
    switch_put(client, tenant.index.id)
    if how == "revoked":
        key_revoke(caller=Caller.system(organisation_id=author.organisation_id, actor="test"), key_id=author.id)
    elif how == "expired":
        ApiKey.objects.filter(pk=author.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    else:
        key_delete(caller=Caller.system(organisation_id=author.organisation_id, actor="test"), key_id=author.id)

    assert tenant.client().get(url(tenant.index.id)).json()["state"] == "author_unavailable"
    assert switch_put(tenant.client(), tenant.index.id).json()["state"] == "active"


def test_a_key_that_lost_threads_leaves_the_switch_active(tenant, fake_model):
    """R-8.6: state checks only its three things; the failures show in the windows."""
    client, author = tenant.key_client(name="author")
    switch_put(client, tenant.index.id)
    ApiKey.objects.filter(pk=author.pk).update(capabilities=["knowledge", "memory"], policy={"read": [], "write": []})

    assert tenant.client().get(url(tenant.index.id)).json()["state"] == "active"


def test_a_model_no_longer_offered_is_model_unavailable_and_sending_it_again_is_refused(tenant, fake_model, settings):
    """R-8.6: it needs an offered model; the same one is a 422 on `model`."""
    switch_put(tenant.client(), tenant.index.id)
    settings.CORE_MODELS = [*settings.CORE_MODELS, {**settings.CORE_MODELS[0], "id": "other-chat"}]
    tenant.organisation.offered_models = ["other-chat"]
    tenant.organisation.save()

    assert tenant.client().get(url(tenant.index.id)).json()["state"] == "model_unavailable"
    refused = switch_put(tenant.client(), tenant.index.id)
    assert (refused.status_code, refused.json()["error"]["param"]) == (422, "model")
    assert switch_put(tenant.client(), tenant.index.id, model="other-chat").json()["state"] == "active"


def test_a_deleted_connector_is_objects_missing_until_the_switch_is_sent_again(tenant, fake_model):
    """R-8.6, R-8.7: re-sending gives the switch a new connector."""
    first = switch_put(tenant.client(), tenant.index.id).json()["connector_id"]

    assert tenant.client().delete(f"/v1/connectors/{first}").status_code == 204

    assert tenant.client().get(url(tenant.index.id)).json()["state"] == "objects_missing"
    mended = switch_put(tenant.client(), tenant.index.id).json()
    assert mended["state"] == "active"
    assert mended["connector_id"] != first


def test_a_deleted_index_leaves_its_switch_objects_missing(tenant, fake_model):
    switch_put(tenant.client(), tenant.index.id)
    index_delete(caller=Caller.system(organisation_id=tenant.index.organisation_id, actor="test"), index=tenant.index)

    tenant.index.refresh_from_db()
    assert switch_state(switch=switch_find(index=tenant.index)) == "objects_missing"


# --- The store's types and the store's answer (R-4.3) --------------------------


def test_a_switchs_types_become_the_stores_known_types(tenant, fake_model):
    """R-5.3: a switch's type is written by hand; a default the switch does not name is refused."""
    switch_put(tenant.client(), tenant.index.id, types=["klant_feit", "preference"])
    client = tenant.client()

    accepted = client.post("/v1/memory", {"index_id": tenant.index.id, "type": "klant_feit", "text": "Acme betaalt per kwartaal."}, format="json")
    refused = client.post("/v1/memory", {"index_id": tenant.index.id, "type": "fact", "text": "Iets."}, format="json")

    assert accepted.status_code == 201
    assert refused.status_code == 422
    assert refused.json()["error"] == {
        "type": "invalid_request_error",
        "message": "Unknown type 'fact'. Allowed types: klant_feit, preference.",
        "param": "type",
    }


def test_the_store_shows_its_switch(tenant, fake_model):
    """R-4.3: the store's answer carries the switch as its own route shows it; null without one."""
    assert tenant.client().get(f"/v1/memory/stores/{tenant.index.id}").json()["extraction"] is None

    switch = switch_put(tenant.client(), tenant.index.id).json()

    assert tenant.client().get(f"/v1/memory/stores/{tenant.index.id}").json()["extraction"] == switch


# --- Re-queuing failed windows (R-8.6) ------------------------------------------------


@pytest.fixture
def windows(tenant, fake_model):
    """A switch with one ready window and failed ones for the model's answer and for the key."""
    switch_put(tenant.client(), tenant.index.id)
    switch = ExtractionSwitch.objects.get()
    thread = thread_create(caller=Caller(key=tenant.key, subject="anna"))
    now = timezone.now()
    made = {}
    for position, (status, code) in enumerate(
        [("ready", ""), ("failed", "invalid_model_output"), ("failed", "write_denied"), ("failed", "threads_capability_missing")]
    ):
        made[code or status] = ExtractionWindow.objects.create(
            organisation=tenant.organisation,
            switch=switch,
            thread=thread,
            first_position=position,
            last_position=position,
            status=status,
            error_code=code,
            attempts=1,
            queued_at=now,
        )
    return made


def statuses(windows) -> dict:
    return {name: ExtractionWindow.objects.get(pk=window.pk).status for name, window in windows.items()}


@pytest.mark.parametrize(
    "change", [{"model": "other-chat"}, {"instructions": "Ook adressen."}, {"types": ["fact"]}]
)
def test_changing_model_instructions_or_types_requeues_failed_windows_only(tenant, windows, settings, change):
    settings.CORE_MODELS = [*settings.CORE_MODELS, {**settings.CORE_MODELS[0], "id": "other-chat"}]

    switch_put(tenant.client(), tenant.index.id, **change)

    assert statuses(windows) == {
        "ready": "ready",
        "invalid_model_output": "queued",
        "write_denied": "queued",
        "threads_capability_missing": "queued",
    }
    assert ExtractionWindow.objects.filter(status="queued").values_list("attempts", "error_code").distinct().get() == (0, "")


def test_sending_the_switch_again_unchanged_requeues_only_what_its_key_failed(tenant, windows):
    """A re-sent switch runs as its sender: windows that failed for the key are read again."""
    switch_put(tenant.client(), tenant.index.id)

    assert statuses(windows) == {
        "ready": "ready",
        "invalid_model_output": "failed",
        "write_denied": "queued",
        "threads_capability_missing": "queued",
    }


# --- Connectors (R-8.7) ---------------------------------------------------------------


def test_a_connector_is_shown_and_deleting_it_needs_knowledge_not_threads(tenant, fake_model):
    connector_id = switch_put(tenant.client(), tenant.index.id).json()["connector_id"]
    client, _ = tenant.key_client(capabilities=["knowledge"])

    shown = client.get(f"/v1/connectors/{connector_id}")
    deleted = client.delete(f"/v1/connectors/{connector_id}")

    assert shown.status_code == 200
    assert shown.json() == {
        "id": connector_id,
        "kind": "extraction",
        "index_id": tenant.index.id,
        "created_at": shown.json()["created_at"],
    }
    assert deleted.status_code == 204
    assert client.get(f"/v1/connectors/{connector_id}").status_code == 404
    event = AuditEvent.objects.get(action="connector.deleted")
    assert (event.target, event.details) == (connector_id, {"index_id": tenant.index.id})


def test_connector_denials(tenant, other_tenant, fake_model):
    connector_id = switch_put(tenant.client(), tenant.index.id).json()["connector_id"]
    reader, _ = tenant.key_client(read=[tenant.index.id], write=[])
    without_knowledge, _ = tenant.key_client(capabilities=["threads"])
    token = tenant.client().post("/v1/subject-tokens", {"subject": "anna"}, format="json").json()["token"]

    assert reader.get(f"/v1/connectors/{connector_id}").status_code == 200
    assert reader.delete(f"/v1/connectors/{connector_id}").status_code == 403
    assert without_knowledge.get(f"/v1/connectors/{connector_id}").status_code == 403
    assert other_tenant.client().get(f"/v1/connectors/{connector_id}").status_code == 404
    assert other_tenant.client().delete(f"/v1/connectors/{connector_id}").status_code == 404
    assert client_for(token).delete(f"/v1/connectors/{connector_id}").status_code == 403
    assert client_for(None).get(f"/v1/connectors/{connector_id}").status_code == 401
    assert ExtractionConnector.objects.get().deleted_at is None
    assert not AuditEvent.objects.filter(action="connector.deleted").exists()
