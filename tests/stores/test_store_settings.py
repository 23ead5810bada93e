import pytest

from audit.models import AuditEvent
from stores.models import MemoryStore, default_injection, default_lessons, default_maintenance, default_promotion
from tests.factories import client_for, make_index

pytestmark = pytest.mark.django_db

DEFAULT_SECTIONS = {
    "injection": default_injection(),
    "lessons": default_lessons(),
    "promotion": default_promotion(),
    "maintenance": default_maintenance(),
}


def store_url(index_id: str) -> str:
    return f"/v1/memory/stores/{index_id}"


def sections_of(index) -> dict:
    store = MemoryStore.objects.get(index=index)
    return {name: getattr(store, name) for name in DEFAULT_SECTIONS}


def store_updates() -> int:
    return AuditEvent.objects.filter(action="store.updated").count()


def assert_nothing_written(index) -> None:
    assert sections_of(index) == DEFAULT_SECTIONS
    assert store_updates() == 0


def test_get_answers_the_whole_store_with_every_default(tenant):
    """R-4.3: both routes answer the whole store, every section with its values."""
    response = tenant.client().get(store_url(tenant.index.id))

    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"index_id", "injection", "lessons", "promotion", "maintenance", "expiry", "extraction", "updated_at"}
    assert body["expiry"] == {"lifetime_days": {}}
    assert body["index_id"] == tenant.index.id
    assert body["injection"] == {
        "token_budget": None,
        "organisation_share": 0.4,
        "rank": "confidence",
        "episodes_limit": 0,
        "commitments": {"inject_limit": 5},
    }
    assert body["lessons"] == {"enabled": False, "min_episodes": 3}
    assert body["promotion"] == {"enabled": False, "labels": {}}
    assert body["maintenance"] == {"enabled": True}


def test_patch_answers_the_whole_store_and_audits_the_sections_sent(tenant):
    """R-4.3, R-11.2: `store.updated` names the sections."""
    response = tenant.client().patch(
        store_url(tenant.index.id), {"lessons": {"enabled": True}, "maintenance": {"enabled": False}}, format="json"
    )

    assert response.status_code == 200
    body = response.json()
    assert body["lessons"] == {"enabled": True, "min_episodes": 3}
    assert body["maintenance"] == {"enabled": False}
    assert body["injection"] == default_injection()
    assert sections_of(tenant.index)["lessons"] == {"enabled": True, "min_episodes": 3}
    event = AuditEvent.objects.get(action="store.updated")
    assert (event.organisation_id, event.actor, event.target) == (tenant.organisation.id, tenant.key.id, tenant.index.id)
    assert event.details == {"sections": ["lessons", "maintenance"]}


def test_sending_a_section_replaces_it_whole(tenant):
    """R-4.3: omitted fields of a section sent return to their defaults; sections not sent stay."""
    client = tenant.client()
    client.patch(
        store_url(tenant.index.id),
        {
            "injection": {"rank": "blend", "episodes_limit": 3, "organisation_share": 0.2, "commitments": {"inject_limit": 9}},
            "lessons": {"enabled": True, "min_episodes": 5},
        },
        format="json",
    )

    response = client.patch(store_url(tenant.index.id), {"injection": {"token_budget": 800}}, format="json")

    assert response.status_code == 200
    assert response.json()["injection"] == {
        "token_budget": 800,
        "organisation_share": 0.4,
        "rank": "confidence",
        "episodes_limit": 0,
        "commitments": {"inject_limit": 5},
    }
    assert response.json()["lessons"] == {"enabled": True, "min_episodes": 5}


def test_an_empty_patch_changes_nothing_and_audits_nothing(tenant):
    """R-4.3."""
    response = tenant.client().patch(store_url(tenant.index.id), {}, format="json")

    assert response.status_code == 200
    assert_nothing_written(tenant.index)


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"injection": {"rnak": "relevance"}}, "injection.rnak"),
        ({"injection": {"rank": "newest"}}, "injection.rank"),
        ({"injection": {"organisation_share": 0.5}}, "injection.organisation_share"),
        ({"injection": {"token_budget": -1}}, "injection.token_budget"),
        ({"injection": {"episodes_limit": -1}}, "injection.episodes_limit"),
        ({"injection": {"commitments": {"inject_limit": -1}}}, "injection.commitments.inject_limit"),
        ({"injection": {"commitments": {"limit": 3}}}, "injection.commitments.limit"),
        ({"lessons": {"min_episodes": 0}}, "lessons.min_episodes"),
        ({"lessons": {"enabled": "yes"}}, "lessons.enabled"),
        ({"maintenance": {"enabled": True, "interval": 5}}, "maintenance.interval"),
        ({"promotion": {"labels": {"audience": 3}}}, "promotion.labels.audience"),
        ({"injection": None}, "injection"),
        ({"extraction": {"enabled": True}}, "extraction"),
    ],
)
def test_an_invalid_section_is_a_400_naming_the_field_and_writes_nothing(tenant, body, param):
    """R-4.3, R-2.3, R-12.3: strict sections; a valid section sent alongside is not written either."""
    response = tenant.client().patch(store_url(tenant.index.id), {"lessons": {"enabled": True}, **body}, format="json")

    assert response.status_code == 400
    assert response.json()["error"]["param"] == param
    assert_nothing_written(tenant.index)


def test_promotion_is_written_by_a_management_and_memory_key_when_the_organisation_has_improvements(tenant):
    """R-4.3."""
    tenant.organisation.capabilities = ["improvements"]
    tenant.organisation.save()
    client, _ = tenant.key_client(capabilities=("knowledge", "memory", "management"))

    response = client.patch(
        store_url(tenant.index.id), {"promotion": {"enabled": True, "labels": {"audience": "everyone"}}}, format="json"
    )

    assert response.status_code == 200
    assert response.json()["promotion"] == {"enabled": True, "labels": {"audience": "everyone"}}
    assert sections_of(tenant.index)["promotion"] == {"enabled": True, "labels": {"audience": "everyone"}}


def test_promotion_without_management_is_a_403_and_writes_no_section(tenant):
    """R-4.3: the other sections of the same PATCH are not written either."""
    tenant.organisation.capabilities = ["improvements"]
    tenant.organisation.save()
    client, _ = tenant.key_client(capabilities=("knowledge", "memory"))

    response = client.patch(
        store_url(tenant.index.id), {"lessons": {"enabled": True}, "promotion": {"enabled": True}}, format="json"
    )

    assert response.status_code == 403
    assert response.json()["error"]["param"] == "promotion"
    assert_nothing_written(tenant.index)


def test_promotion_in_an_organisation_without_improvements_is_a_403_even_for_the_owner_key(tenant):
    """R-4.3."""
    response = tenant.client().patch(
        store_url(tenant.index.id), {"maintenance": {"enabled": False}, "promotion": {"enabled": True}}, format="json"
    )

    assert response.status_code == 403
    assert response.json()["error"]["param"] == "promotion"
    assert_nothing_written(tenant.index)


def test_a_subject_token_of_a_management_key_may_not_set_promotion(tenant):
    """R-4.3: promotion is the organisation's to set; a subject token speaks for one person
    and may not use what needs `management` (docs/decisions.md)."""
    tenant.organisation.capabilities = ["improvements"]
    tenant.organisation.save()
    token = tenant.client().post("/v1/subject-tokens", {"subject": "anna"}, format="json").json()["token"]

    response = client_for(token).patch(store_url(tenant.index.id), {"promotion": {"enabled": True}}, format="json")

    assert response.status_code == 403
    # Refused before any section is read: a subject token changes no store section at all.
    assert response.json()["error"] == {
        "type": "permission_error",
        "message": "A subject token acts for one person; it cannot change organisation-wide settings.",
        "param": None,
    }
    assert_nothing_written(tenant.index)


def test_lessons_need_only_memory(tenant):
    """R-4.3: every section but promotion needs only `memory`."""
    client, _ = tenant.key_client(capabilities=("knowledge", "memory"))

    response = client.patch(store_url(tenant.index.id), {"lessons": {"enabled": True}}, format="json")

    assert response.status_code == 200
    assert sections_of(tenant.index)["lessons"] == {"enabled": True, "min_episodes": 3}


# --- permission matrix (R-2.7, R-4.2, R-2.5, R-2.1) ---------------------------------------------


def test_a_key_without_memory_is_a_403_and_writes_nothing(tenant):
    client, _ = tenant.key_client(capabilities=("knowledge", "management"))

    assert client.get(store_url(tenant.index.id)).status_code == 403
    assert client.patch(store_url(tenant.index.id), {"lessons": {"enabled": True}}, format="json").status_code == 403
    assert_nothing_written(tenant.index)


def test_a_key_whose_policy_does_not_name_the_index_gets_a_404_and_writes_nothing(tenant):
    other_index = make_index(tenant.organisation, name="other")
    client, _ = tenant.key_client(read=(other_index.id,), write=(other_index.id,))

    assert client.get(store_url(tenant.index.id)).status_code == 404
    assert client.patch(store_url(tenant.index.id), {"lessons": {"enabled": True}}, format="json").status_code == 404
    assert_nothing_written(tenant.index)


def test_a_read_only_policy_may_read_the_store_but_not_change_it(tenant):
    """R-5.2: read and write rights are separate."""
    client, _ = tenant.key_client(read=(tenant.index.id,), write=())

    assert client.get(store_url(tenant.index.id)).status_code == 200
    response = client.patch(store_url(tenant.index.id), {"lessons": {"enabled": True}}, format="json")
    assert response.status_code == 403
    assert_nothing_written(tenant.index)


def test_a_write_only_policy_may_change_the_store_but_not_read_it(tenant):
    client, _ = tenant.key_client(read=(), write=(tenant.index.id,))

    assert client.get(store_url(tenant.index.id)).status_code == 403
    assert client.patch(store_url(tenant.index.id), {"lessons": {"enabled": True}}, format="json").status_code == 200


def test_another_organisations_store_is_a_404_and_writes_nothing(tenant, other_tenant):
    client = tenant.client()

    assert client.get(store_url(other_tenant.index.id)).status_code == 404
    assert client.patch(store_url(other_tenant.index.id), {"lessons": {"enabled": True}}, format="json").status_code == 404
    assert_nothing_written(other_tenant.index)


def test_a_deleted_index_has_no_store(tenant):
    """R-4.1: a deleted index and all it holds are unavailable at once."""
    tenant.client().delete(f"/v1/indexes/{tenant.index.id}")

    assert tenant.client().get(store_url(tenant.index.id)).status_code == 404
    assert tenant.client().patch(store_url(tenant.index.id), {"lessons": {"enabled": True}}, format="json").status_code == 404
    assert_nothing_written(tenant.index)


def test_no_credential_is_a_401_and_writes_nothing(tenant, anonymous):
    assert anonymous.get(store_url(tenant.index.id)).status_code == 401
    assert anonymous.patch(store_url(tenant.index.id), {"lessons": {"enabled": True}}, format="json").status_code == 401
    assert_nothing_written(tenant.index)
