"""Authentication reads the credential afresh on every request (R-2.1, docs/decisions.md "Caches"):
whatever a process has seen of a key, revoking, expiring, deleting or changing it counts at once,
whoever makes the change (a service, the console, another process, plain SQL)."""
from __future__ import annotations

from datetime import timedelta
from unittest import mock

from django.db import connection
from django.utils import timezone

from core_memory.keys.authentication import caller_for_secret
from core_memory.organisations.models import Organisation
from tests.factories import client_for


def _sql(statement: str, *parameters) -> None:
    """A change made outside Django, as another process or an operator might make it."""
    with connection.cursor() as cursor:
        cursor.execute(statement, parameters)


def test_a_key_revoked_after_being_used_is_refused_at_once(tenant):
    """R-2.1."""
    client, key = tenant.key_client(capabilities=["knowledge"])
    assert client.get("/v1/indexes").status_code == 200

    assert tenant.client().delete(f"/v1/tenants/{tenant.organisation.id}/keys/{key.id}").status_code == 200

    assert client.get("/v1/indexes").status_code == 401


def test_a_key_revoked_in_the_database_by_another_process_is_refused_at_once(tenant):
    """R-2.1: nothing of the key is kept between requests."""
    client, key = tenant.key_client(capabilities=["knowledge"])
    assert client.get("/v1/indexes").status_code == 200

    _sql("UPDATE keys_apikey SET revoked_at = now() WHERE id = %s", key.id)

    assert client.get("/v1/indexes").status_code == 401


def test_a_key_deleted_after_being_used_is_refused_at_once(tenant):
    """R-2.1."""
    client, key = tenant.key_client(capabilities=["knowledge"])
    assert client.get("/v1/indexes").status_code == 200

    _sql("DELETE FROM keys_apikey WHERE id = %s", key.id)

    assert client.get("/v1/indexes").status_code == 401


def test_a_key_is_refused_from_the_moment_it_expires(tenant):
    """R-2.1: expiry is judged against the clock of each request."""
    expires_at = timezone.now() + timedelta(minutes=5)
    client, _key = tenant.key_client(capabilities=["knowledge"], expires_at=expires_at)
    assert client.get("/v1/indexes").status_code == 200

    with mock.patch("core_memory.keys.authentication.timezone.now", return_value=expires_at + timedelta(microseconds=1)):
        assert client.get("/v1/indexes").status_code == 401


def test_a_capability_taken_away_counts_at_once(tenant):
    """R-2.7: the key's rights are those it has when the request comes."""
    client, key = tenant.key_client(capabilities=["knowledge"])
    assert client.get("/v1/indexes").status_code == 200

    _sql("UPDATE keys_apikey SET capabilities = '[]' WHERE id = %s", key.id)

    assert client.get("/v1/indexes").status_code == 403


def test_a_subject_token_erased_with_her_person_is_refused_at_once(tenant):
    """R-3.4: erasing a person erases her tokens; a token seen before is no exception."""
    token = tenant.client().post("/v1/subject-tokens", {"subject": "anna", "ttl_seconds": 600}, format="json").json()["token"]
    assert client_for(token).get("/v1/indexes").status_code == 200

    assert tenant.client().delete("/v1/persons/anna").status_code == 200

    assert client_for(token).get("/v1/indexes").status_code == 401


def test_authentication_reads_the_key_and_its_organisation_in_one_query(tenant, django_assert_num_queries):
    """R-12.5: one query per request, stamped with the organisation's configuration version."""
    with django_assert_num_queries(1):
        caller = caller_for_secret(tenant.secret)

    assert caller.key.id == tenant.key.id
    assert caller.key.capabilities == tenant.key.capabilities
    assert caller.key.policy == tenant.key.policy
    assert caller.key.organisation.id == tenant.organisation.id == caller.organisation_id
    assert caller.key.organisation.timezone == tenant.organisation.timezone
    assert caller.key.config_version == _config_version(tenant.organisation)


def _config_version(organisation) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT config_version FROM organisations_organisation WHERE id = %s", [organisation.id])
        return cursor.fetchone()[0]


def test_every_change_to_the_organisations_configuration_raises_its_version(tenant):
    """docs/decisions.md "Caches": whoever changes a key, token, index, store or the organisation."""
    organisation = tenant.organisation
    token = tenant.client().post("/v1/subject-tokens", {"subject": "anna", "ttl_seconds": 600}, format="json").json()["token"]
    changes = [
        ("UPDATE keys_apikey SET name = 'renamed' WHERE id = %s", tenant.key.id),
        ("UPDATE stores_knowledgeindex SET name = 'renamed' WHERE id = %s", tenant.index.id),
        ("UPDATE stores_memorystore SET known_types = '[\"fact\"]' WHERE index_id = %s", tenant.index.id),
        ("DELETE FROM keys_subjecttoken WHERE key_id = %s", caller_for_secret(token).key.id),
        ("UPDATE organisations_organisation SET name = 'renamed' WHERE id = %s", organisation.id),
    ]
    for statement, parameter in changes:
        before = _config_version(organisation)
        _sql(statement, parameter)
        assert _config_version(organisation) == before + 1, statement


def test_saving_an_organisation_read_long_ago_never_lowers_its_version(tenant):
    """A stale object's save() writes its old number; the database raises the version instead."""
    stale = Organisation.objects.get(pk=tenant.organisation.pk)
    _sql("UPDATE keys_apikey SET name = 'renamed' WHERE id = %s", tenant.key.id)
    before = _config_version(tenant.organisation)

    stale.name = "renamed"
    stale.save()

    assert _config_version(tenant.organisation) == before + 1
