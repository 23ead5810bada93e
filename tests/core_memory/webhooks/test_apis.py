"""The webhook routes: who may use them, what they answer, which addresses they refuse."""
from __future__ import annotations

import pytest

from audit.models import AuditEvent
from core_memory.keys.services import subject_token_create
from core_memory.base.callers import Caller
from core_memory.webhooks.models import WebhookSubscription
from tests.factories import client_for
from tests.core_memory.webhooks.conftest import subscribe


def test_a_subscription_answers_its_secret_once(tenant, receiver):
    client = tenant.client()
    body = {"url": receiver.url, "events": ["record.created", "person.erased"]}

    created = client.post("/v1/webhooks", body, format="json", HTTP_IDEMPOTENCY_KEY="hook-1")
    replayed = client.post("/v1/webhooks", body, format="json", HTTP_IDEMPOTENCY_KEY="hook-1")

    assert created.status_code == 201
    answer = created.json()
    assert answer["secret"].startswith("whsec_") and answer["status"] == "active"
    assert answer["events"] == ["person.erased", "record.created"]
    assert replayed.status_code == 201 and replayed.json()["secret"] is None and replayed.json()["id"] == answer["id"]
    listed = client.get("/v1/webhooks").json()["data"]
    assert [item["id"] for item in listed] == [answer["id"]] and "secret" not in listed[0]
    assert "secret" not in client.get(f"/v1/webhooks/{answer['id']}").json()
    assert AuditEvent.objects.filter(action="webhook.created", target=answer["id"]).count() == 1


def test_a_subscription_changes_and_goes(tenant, receiver):
    subscription = subscribe(tenant, receiver.url)
    client = tenant.client()

    changed = client.patch(f"/v1/webhooks/{subscription['id']}", {"events": ["record.deleted"], "description": "CRM"}, format="json")
    assert changed.status_code == 200 and changed.json()["events"] == ["record.deleted"] and changed.json()["description"] == "CRM"
    assert client.delete(f"/v1/webhooks/{subscription['id']}").status_code == 204
    assert client.get(f"/v1/webhooks/{subscription['id']}").status_code == 404
    assert list(AuditEvent.objects.filter(target=subscription["id"]).values_list("action", flat=True).order_by("id")) == [
        "webhook.created", "webhook.updated", "webhook.deleted",
    ]


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9/hooks",
        "http://localhost/hooks",
        "http://10.1.2.3/hooks",
        "http://192.168.1.10/hooks",
        "http://172.16.0.1/hooks",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/hooks",
        "http://[fe80::1]/hooks",
        "http://[::ffff:127.0.0.1]/hooks",
        "http://0.0.0.0/hooks",
        "http://100.64.0.1/hooks",
    ],
)
def test_a_loopback_private_or_link_local_address_is_refused(tenant, url):
    """SSRF: unless the operator allows private networks, nothing inside them can be subscribed."""
    answer = tenant.client().post("/v1/webhooks", {"url": url, "events": ["record.created"]}, format="json")

    assert answer.status_code == 400
    assert answer.json()["error"]["param"] == "url"
    assert not WebhookSubscription.objects.exists()


@pytest.mark.parametrize("url", ["http://testserver/v1/memory", "ftp://example.com/x", "http://user:pw@127.0.0.1/x"])
def test_core_itself_another_scheme_or_credentials_are_refused_even_where_private_networks_are_allowed(tenant, settings, url):
    settings.CORE_WEBHOOKS_ALLOW_PRIVATE_NETWORKS = True

    answer = tenant.client().post("/v1/webhooks", {"url": url, "events": ["record.created"]}, format="json")

    assert answer.status_code == 400 and answer.json()["error"]["param"] == "url"
    assert not WebhookSubscription.objects.exists()


def test_a_changed_address_is_checked_too(tenant, receiver, settings):
    subscription = subscribe(tenant, receiver.url)
    settings.CORE_WEBHOOKS_ALLOW_PRIVATE_NETWORKS = False

    answer = tenant.client().patch(f"/v1/webhooks/{subscription['id']}", {"url": "http://10.0.0.5/x"}, format="json")

    assert answer.status_code == 400 and answer.json()["error"]["param"] == "url"
    assert WebhookSubscription.objects.get().url == receiver.url


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"url": "http://127.0.0.1/x", "events": ["record.exploded"]}, "events"),
        ({"url": "http://127.0.0.1/x", "events": []}, "events"),
        ({"url": "not a url", "events": ["record.created"]}, "url"),
        ({"events": ["record.created"]}, "url"),
        ({"url": "http://127.0.0.1/x", "events": ["record.created"], "secret": "mine"}, "secret"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(tenant, receiver, body, param):
    answer = tenant.client().post("/v1/webhooks", body, format="json")

    assert answer.status_code == 400 and answer.json()["error"]["param"].startswith(param)
    assert not WebhookSubscription.objects.exists()


def test_only_a_management_key_of_the_organisation_may_use_webhooks(tenant, other_tenant, receiver, anonymous):
    subscription = subscribe(tenant, receiver.url)
    memory_only, _ = tenant.key_client(capabilities=["knowledge", "memory"])
    _, token = subject_token_create(caller=Caller(key=tenant.key, subject="anna"), ttl_seconds=600)
    path = f"/v1/webhooks/{subscription['id']}"
    before = list(WebhookSubscription.objects.values_list("id", "url", "events", "status"))

    assert anonymous.get("/v1/webhooks").status_code == 401
    assert memory_only.get("/v1/webhooks").status_code == 403
    assert memory_only.delete(path).status_code == 403
    assert client_for(token).get("/v1/webhooks").status_code == 403
    assert other_tenant.client().get(path).status_code == 404
    assert other_tenant.client().patch(path, {"status": "paused"}, format="json").status_code == 404
    assert other_tenant.client().delete(path).status_code == 404
    assert other_tenant.client().get(f"{path}/deliveries").status_code == 404
    assert other_tenant.client().get("/v1/webhooks").json()["data"] == []
    assert list(WebhookSubscription.objects.values_list("id", "url", "events", "status")) == before
