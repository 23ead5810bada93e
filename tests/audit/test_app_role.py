"""The role the service runs as (`manage.py database_roles`, R-11.1): it appends to the audit
log but cannot back-date an event, move the chain's head, or run what it was not granted."""
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import DatabaseError, connection, transaction

from audit.chain import audit_chains_verify
from audit.models import AuditChainHead, AuditEvent
from audit.services import audit_event_record

pytestmark = pytest.mark.django_db

APP_ROLE = "core_test_app"


@pytest.fixture
def app_role(tenant):
    """The service's role as `manage.py database_roles` makes it, inside the test's transaction."""
    audit_event_record(organisation_id=tenant.organisation.id, actor="test", action="key.updated", target="key_x")
    call_command("database_roles", "--app-role", APP_ROLE, stdout=StringIO())
    return APP_ROLE


def as_role(role: str, statement: str, parameters=()):
    """Runs `statement` as `role`; a refused one rolls back to the caller's savepoint, and its role with it."""
    with connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL ROLE {role}")
        cursor.execute(statement, parameters)
        rows = cursor.fetchall() if cursor.description else None
        cursor.execute("RESET ROLE")
    return rows


def test_a_forged_back_dated_insert_by_the_service_role_is_dated_now(app_role, tenant):
    """Issue: as a role with ordinary grants, an INSERT with `at` in the past passed audit_verify
    and showed in GET /v1/audit at the date it claimed. The database dates it now."""
    as_role(
        app_role,
        "INSERT INTO audit_auditevent (id, organisation_id, at, actor, action, target, details)"
        " VALUES ('aud_forged', %s, '2026-10-01 09:00+00', 'console:adminB', 'person.erased', 'forged-victim', '{}')",
        [tenant.organisation.id],
    )

    forged = AuditEvent.objects.get(pk="aud_forged")
    newest_before = AuditEvent.objects.filter(organisation_id=tenant.organisation.id).exclude(pk="aud_forged").latest("sequence")
    assert forged.at.isoformat() != "2026-10-01T09:00:00+00:00"
    assert forged.at >= newest_before.at and forged.sequence == newest_before.sequence + 1
    assert all(report.intact for report in audit_chains_verify(organisation_id=tenant.organisation.id))


@pytest.mark.parametrize(
    "statement",
    [
        pytest.param("UPDATE audit_auditchainhead SET sequence = 0, hash = repeat('0', 64)", id="head-update"),
        pytest.param("INSERT INTO audit_auditchainhead (organisation_id, sequence, hash, purged_through, time_ordered_from)"
                     " VALUES ('org_forged', 0, repeat('0', 64), 0, 1)", id="head-insert"),
        pytest.param("DELETE FROM audit_auditchainhead", id="head-delete"),
        pytest.param("UPDATE audit_auditevent SET target = 'key_y'", id="event-update"),
        pytest.param("DELETE FROM audit_auditevent", id="event-delete"),
        pytest.param("CREATE TABLE harmless (id int)", id="create-table"),
    ],
)
def test_the_service_role_cannot_touch_the_chain_head_or_rewrite_events(app_role, tenant, statement):
    """The chain's head moves only by the database's insert trigger (it runs as the log's owner),
    and the role owns nothing it could add a trigger to."""
    head = AuditChainHead.objects.get(organisation_id=tenant.organisation.id)

    with pytest.raises(DatabaseError), transaction.atomic():
        as_role(app_role, statement)

    assert AuditChainHead.objects.get(organisation_id=tenant.organisation.id).hash == head.hash
    assert AuditEvent.objects.filter(organisation_id=tenant.organisation.id, target="key_x").exists()


def test_the_purge_and_the_scrub_are_not_public(app_role):
    """Issue: `audit_retention_purge` was executable by PUBLIC. Only the granted role runs it."""
    with connection.cursor() as cursor:
        cursor.execute("CREATE ROLE core_test_bystander NOLOGIN")
        cursor.execute(
            "SELECT has_function_privilege('core_test_bystander', 'audit_retention_purge(timestamptz)', 'EXECUTE'),"
            " has_function_privilege('core_test_bystander', 'audit_event_scrub(text, boolean, text[])', 'EXECUTE'),"
            " has_function_privilege(%s, 'audit_retention_purge(timestamptz)', 'EXECUTE'),"
            " has_function_privilege(%s, 'audit_event_scrub(text, boolean, text[])', 'EXECUTE')",
            [app_role, app_role],
        )
        assert cursor.fetchone() == (False, False, True, True)

    with pytest.raises(DatabaseError, match="permission denied"), transaction.atomic():
        as_role("core_test_bystander", "SELECT audit_retention_purge(now())")


def test_the_service_role_runs_the_service(app_role, tenant):
    """What the service does through its role: write and read records, append an audit event."""
    as_role(app_role, "UPDATE organisations_organisation SET name = name WHERE id = %s", [tenant.organisation.id])
    as_role(app_role, "INSERT INTO audit_auditevent (id, organisation_id, actor, action, target, details) VALUES ('aud_ok', %s, 'x', 'key.updated', '', '{}')", [tenant.organisation.id])
    assert as_role(app_role, "SELECT audit_retention_purge(now())") == [(0,)]
    assert as_role(app_role, "SELECT count(*) FROM memory_memoryrecord")[0][0] >= 0


def test_the_service_role_may_not_be_a_superuser():
    with connection.cursor() as cursor:
        cursor.execute("CREATE ROLE core_test_super SUPERUSER NOLOGIN")

    with pytest.raises(CommandError, match="superuser"):
        call_command("database_roles", "--app-role", "core_test_super", stdout=StringIO())
