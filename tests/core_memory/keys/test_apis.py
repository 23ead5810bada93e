import pytest

from audit.models import AuditEvent
from core_memory.keys.models import ApiKey, KeyTrailEntry
from tests.core_memory.conftest import INJECTION_BLOCK_DEFAULTS, KEY_MEMORY_DEFAULTS
from tests.factories import client_for, make_index

pytestmark = pytest.mark.django_db


def keys_url(tenant, key_id: str | None = None) -> str:
    base = f"/v1/tenants/{tenant.organisation.id}/keys"
    return f"{base}/{key_id}" if key_id else base


def test_creating_a_key_answers_its_secret_once_and_it_works(tenant):
    """R-3.2: POST answers the key with `key: core_sk_…`; the secret authenticates."""
    response = tenant.client().post(
        keys_url(tenant),
        {"name": "bot", "capabilities": ["knowledge", "memory"], "policy": {"read": [tenant.index.id], "write": []}},
        format="json",
    )

    assert response.status_code == 201
    body = response.json()
    assert body["id"].startswith("key_")
    assert body["key"].startswith("core_sk_")
    assert body["capabilities"] == ["knowledge", "memory"]
    assert body["policy"] == {"read": [tenant.index.id], "write": []}
    assert body["memory"] == KEY_MEMORY_DEFAULTS
    assert body["revoked_at"] is None
    assert client_for(body["key"]).get("/v1/indexes").status_code == 200
    assert AuditEvent.objects.filter(action="key.created", target=body["id"], actor=tenant.key.id).count() == 1
    assert KeyTrailEntry.objects.filter(key_id=body["id"], event="created").count() == 1


def test_no_answer_but_creation_shows_a_secret(tenant):
    """R-3.2: list, detail, PATCH and DELETE never show the secret."""
    created = tenant.client().post(keys_url(tenant), {"name": "bot"}, format="json").json()
    secret = created["key"]
    client = tenant.client()

    answers = [
        client.get(keys_url(tenant)),
        client.get(keys_url(tenant, created["id"])),
        client.patch(keys_url(tenant, created["id"]), {"name": "renamed"}, format="json"),
        client.delete(keys_url(tenant, created["id"])),
    ]

    for answer in answers:
        assert answer.status_code == 200
        text = answer.content.decode()
        assert "core_sk_" not in text
        assert secret[-8:] not in text
        assert '"key"' not in text


def test_deleting_a_key_revokes_it_and_it_stays_listed(tenant):
    """R-3.2, R-2.1: a revoked key is listed with `revoked_at` and answers 401."""
    other_client, other_key = tenant.key_client()
    assert other_client.get("/v1/indexes").status_code == 200

    response = tenant.client().delete(keys_url(tenant, other_key.id))

    assert response.status_code == 200
    other_key.refresh_from_db()
    assert response.json()["revoked_at"] == other_key.revoked_at.isoformat().replace("+00:00", "Z")
    listed = {row["id"]: row for row in tenant.client().get(keys_url(tenant)).json()["data"]}
    assert listed[other_key.id]["revoked_at"] == response.json()["revoked_at"]
    assert other_client.get("/v1/indexes").status_code == 401
    assert AuditEvent.objects.filter(action="key.revoked", target=other_key.id).count() == 1
    assert KeyTrailEntry.objects.filter(key_id=other_key.id, event="revoked").count() == 1


def test_revoking_twice_writes_one_event(tenant):
    """R-11.2: a second revocation changes nothing."""
    _, other_key = tenant.key_client()
    first = tenant.client().delete(keys_url(tenant, other_key.id)).json()
    second = tenant.client().delete(keys_url(tenant, other_key.id)).json()

    assert first["revoked_at"] == second["revoked_at"]
    assert AuditEvent.objects.filter(action="key.revoked", target=other_key.id).count() == 1


def test_patch_changes_only_the_given_fields_and_is_audited(tenant):
    """R-3.2, R-11.2."""
    _, other_key = tenant.key_client(capabilities=("knowledge",), read=(tenant.index.id,), write=())

    response = tenant.client().patch(
        keys_url(tenant, other_key.id), {"capabilities": ["knowledge", "threads"], "pii_redaction": True}, format="json"
    )

    assert response.status_code == 200
    other_key.refresh_from_db()
    assert other_key.capabilities == ["knowledge", "threads"]
    assert other_key.pii_redaction is True
    assert other_key.policy == {"read": [tenant.index.id], "write": []}
    event = AuditEvent.objects.get(action="key.updated", target=other_key.id)
    assert event.details == {"fields": ["capabilities", "pii_redaction"]}


def test_patching_memory_replaces_it_with_defaults_filled(tenant):
    """R-3.2: the stored memory configuration is always complete."""
    _, other_key = tenant.key_client()

    response = tenant.client().patch(
        keys_url(tenant, other_key.id),
        {"memory": {"write_tool": True, "injection": {"index_id": tenant.index.id, "limit": 5}}},
        format="json",
    )

    assert response.status_code == 200
    other_key.refresh_from_db()
    assert other_key.memory == {
        **KEY_MEMORY_DEFAULTS,
        "write_tool": True,
        "injection": {**INJECTION_BLOCK_DEFAULTS, "enabled": True, "index_id": tenant.index.id, "limit": 5},
    }


def test_memory_without_knowledge_is_a_422_on_capabilities(tenant):
    """R-3.2."""
    response = tenant.client().post(keys_url(tenant), {"name": "bot", "capabilities": ["memory"]}, format="json")

    assert response.status_code == 422
    assert response.json()["error"]["param"] == "capabilities"
    assert ApiKey.objects.filter(organisation=tenant.organisation).count() == 1


def test_patching_away_knowledge_from_a_memory_key_is_a_422(tenant):
    """R-3.2: the rule holds for the key as it would be after the change."""
    _, other_key = tenant.key_client(capabilities=("knowledge", "memory"))

    response = tenant.client().patch(keys_url(tenant, other_key.id), {"capabilities": ["memory"]}, format="json")

    assert response.status_code == 422
    assert response.json()["error"]["param"] == "capabilities"
    other_key.refresh_from_db()
    assert other_key.capabilities == ["knowledge", "memory"]


def test_unknown_capability_is_a_400_naming_its_position(tenant):
    """R-2.3."""
    response = tenant.client().post(keys_url(tenant), {"name": "bot", "capabilities": ["knowledge", "root"]}, format="json")

    assert response.status_code == 400
    assert response.json()["error"]["param"] == "capabilities[1]"


@pytest.mark.parametrize("right", ["read", "write"])
def test_policy_naming_another_organisations_index_is_a_422_on_its_position(tenant, other_tenant, right):
    """R-3.2, R-12.1."""
    policy = {right: ["*", other_tenant.index.id]}

    response = tenant.client().post(keys_url(tenant), {"name": "bot", "policy": policy}, format="json")

    assert response.status_code == 422
    assert response.json()["error"]["param"] == f"policy.{right}[1]"
    assert ApiKey.objects.filter(organisation=tenant.organisation).count() == 1


def test_policy_naming_a_deleted_index_is_a_422(tenant):
    """R-3.2: a deleted index is no index of the organisation."""
    index = make_index(tenant.organisation, name="gone")
    assert tenant.client().delete(f"/v1/indexes/{index.id}").status_code == 204

    response = tenant.client().post(keys_url(tenant), {"name": "bot", "policy": {"read": [index.id]}}, format="json")

    assert response.status_code == 422
    assert response.json()["error"]["param"] == "policy.read[0]"


def test_injection_index_of_another_organisation_is_a_422_on_its_path(tenant, other_tenant):
    """R-3.2: `memory.injection.index_id` names an index of this organisation."""
    memory = {"injection": {"enabled": True, "index_id": other_tenant.index.id}}

    response = tenant.client().post(keys_url(tenant), {"name": "bot", "memory": memory}, format="json")

    assert response.status_code == 422
    assert response.json()["error"]["param"] == "memory.injection.index_id"


@pytest.mark.parametrize(
    ("memory", "param"),
    [
        ({"injection": {"enabled": True}}, "memory.injection.index_id"),
        ({"injection": {"index_id": "idx_x", "limit": -1}}, "memory.injection.limit"),
        ({"injection": {"index_id": "idx_x", "types": ["fact", "Bad Type"]}}, "memory.injection.types[1]"),
        ({"decay": {"half_life_days": {"preference": 0}}}, "memory.decay.half_life_days.preference"),
        ({"retrieval_tools": True}, "memory.retrieval_tools"),
    ],
)
def test_malformed_memory_configuration_is_a_400_naming_the_path(tenant, memory, param):
    """R-2.3, R-3.2."""
    for response in (
        tenant.client().post(keys_url(tenant), {"name": "bot", "memory": memory}, format="json"),
        tenant.client().patch(keys_url(tenant, tenant.key.id), {"memory": memory}, format="json"),
    ):
        assert response.status_code == 400
        assert response.json()["error"]["param"] == param


def test_expires_at_without_offset_is_a_400(tenant):
    """R-2.4."""
    response = tenant.client().post(keys_url(tenant), {"name": "bot", "expires_at": "2030-01-01T00:00:00"}, format="json")

    assert response.status_code == 400
    assert response.json()["error"]["param"] == "expires_at"


def test_an_expired_key_is_a_401(tenant):
    """R-2.1."""
    created = tenant.client().post(
        keys_url(tenant), {"name": "bot", "capabilities": ["knowledge"], "expires_at": "2020-01-01T00:00:00+00:00"}, format="json"
    ).json()

    assert client_for(created["key"]).get("/v1/indexes").status_code == 401


def test_key_list_is_paginated_newest_first(tenant):
    """R-2.4."""
    created = [tenant.client().post(keys_url(tenant), {"name": f"k{n}"}, format="json").json()["id"] for n in range(2)]

    first = tenant.client().get(keys_url(tenant) + "?limit=2").json()
    second = tenant.client().get(keys_url(tenant) + f"?limit=2&cursor={first['next_cursor']}").json()

    assert [row["id"] for row in first["data"]] == [created[1], created[0]]
    assert [row["id"] for row in second["data"]] == [tenant.key.id]
    assert second["next_cursor"] is None


def test_another_organisations_key_is_a_404_even_under_the_own_organisation(tenant, other_tenant):
    """R-2.5."""
    response = tenant.client().get(keys_url(tenant, other_tenant.key.id))

    assert response.status_code == 404
    assert tenant.client().delete(keys_url(tenant, other_tenant.key.id)).status_code == 404
    other_tenant.key.refresh_from_db()
    assert other_tenant.key.revoked_at is None


def test_idempotent_key_creation_replays_the_first_answer_and_makes_one_key(tenant):
    """R-2.6."""
    client = tenant.client()
    first = client.post(keys_url(tenant), {"name": "once"}, format="json", HTTP_IDEMPOTENCY_KEY="create-1")
    again = client.post(keys_url(tenant), {"name": "once"}, format="json", HTTP_IDEMPOTENCY_KEY="create-1")
    other = client.post(keys_url(tenant), {"name": "twice"}, format="json", HTTP_IDEMPOTENCY_KEY="create-1")

    assert first.status_code == again.status_code == 201
    assert again.json() == {**first.json(), "key": None}  # the secret is shown once, never replayed
    assert again["Idempotent-Replayed"] == "true"
    assert other.status_code == 422
    assert other.json()["error"]["param"] == "Idempotency-Key"
    assert ApiKey.objects.filter(organisation=tenant.organisation).exclude(id=tenant.key.id).count() == 1


def test_an_index_deleted_since_does_not_block_renaming_the_key(tenant):
    """R-3.2: only the policy or memory a PATCH gives is checked against the live indexes."""
    index = make_index(tenant.organisation, name="later gone")
    _, other_key = tenant.key_client(read=(index.id,), memory={"injection": {"index_id": index.id}})
    assert tenant.client().delete(f"/v1/indexes/{index.id}").status_code == 204

    renamed = tenant.client().patch(keys_url(tenant, other_key.id), {"name": "renamed"}, format="json")
    same_policy = tenant.client().patch(keys_url(tenant, other_key.id), {"policy": {"read": [index.id]}}, format="json")

    assert renamed.status_code == 200
    assert same_policy.status_code == 422
    assert same_policy.json()["error"]["param"] == "policy.read[0]"


def test_listing_keys_takes_a_fixed_number_of_queries(tenant, django_assert_num_queries):
    """STYLE: no per-row queries."""
    for number in range(5):
        tenant.key_client(name=f"k{number}")

    with django_assert_num_queries(3):
        response = tenant.client().get(keys_url(tenant))

    assert len(response.json()["data"]) == 6


def test_a_revoked_key_cannot_be_changed_again(tenant):
    """R-3.2: DELETE revokes for good; the revoked key stays listed as it was."""
    _, other_key = tenant.key_client(name="old")
    assert tenant.client().delete(keys_url(tenant, other_key.id)).status_code == 200
    other_key.refresh_from_db()
    revoked_at = other_key.revoked_at

    response = tenant.client().patch(keys_url(tenant, other_key.id), {"name": "revived", "expires_at": None}, format="json")

    assert response.status_code == 409
    assert response.json()["error"] == {
        "type": "conflict_error",
        "message": "This key is revoked; create a new key instead.",
        "param": None,
    }
    other_key.refresh_from_db()
    assert (other_key.name, other_key.revoked_at) == ("old", revoked_at)


# Valid ISO 8601 with an offset, but outside the years Python can read back in every zone.
UNREADABLE_TIMES = ["9999-12-31T23:00:00-14:00", "0001-01-01T00:00:00+14:00", "9999-12-31T12:00:00Z"]


@pytest.mark.parametrize("expires_at", UNREADABLE_TIMES)
def test_a_key_expiry_outside_the_readable_years_is_a_400_and_no_key_is_made(tenant, expires_at):
    """R-12.3: such a key was stored, its answer was a 400, and every later key list a 500."""
    url = f"/v1/tenants/{tenant.organisation.id}/keys"

    response = tenant.client().post(url, {"name": "far", "expires_at": expires_at}, format="json")

    assert (response.status_code, response.json()["error"]["param"]) == (400, "expires_at")
    assert not tenant.organisation.keys.filter(name="far").exists()
    assert tenant.client().get(url).status_code == 200
