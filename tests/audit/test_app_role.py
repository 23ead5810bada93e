"""The role the service runs as (`manage.py database_roles`, R-11.1): it appends to the audit
log but cannot back-date an event, move the chain's head, or run what it was not granted."""
import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import DatabaseError, connection, transaction

from audit.chain import audit_chains_verify
from audit.models import AuditChainHead, AuditEvent
from audit.services import audit_event_record
from core_memory.base.callers import Caller

pytestmark = pytest.mark.django_db

APP_ROLE = "core_test_app"


@pytest.fixture
def app_role(tenant):
    """The service's role as `manage.py database_roles` makes it, inside the test's transaction."""
    audit_event_record(caller=Caller.system(organisation_id=tenant.organisation.id, actor="test"), action="key.updated", target="key_x")
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
            " has_function_privilege('core_test_bystander', 'audit_event_scrub(text, text, boolean, text[])', 'EXECUTE'),"
            " has_function_privilege(%s, 'audit_retention_purge(timestamptz)', 'EXECUTE'),"
            " has_function_privilege(%s, 'audit_event_scrub(text, text, boolean, text[])', 'EXECUTE')",
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


# --- the database defends itself: no temporary table shadows what its functions read (issue 28) ---


def _forged_retention(app_role, tenant) -> None:
    """Issue 28: a temporary `organisations_organisation` with a retention of -36500 days made
    `audit_retention_purge` delete minutes-old events; `audit_verify` then reported the chain intact."""
    as_role(app_role, "CREATE TEMP TABLE organisations_organisation (id varchar(40), audit_retention_days int)")
    as_role(app_role, "INSERT INTO organisations_organisation VALUES (%s, -36500)", [tenant.organisation.id])
    as_role(app_role, "GRANT SELECT ON organisations_organisation TO core_audit_purge")

    assert as_role(app_role, "SELECT audit_retention_purge(now())") == [(0,)]


def _forged_chain_head(app_role, tenant) -> None:
    """A temporary `audit_auditchainhead` at the genesis would restart the chain the trigger extends."""
    head = AuditChainHead.objects.get(organisation_id=tenant.organisation.id)
    as_role(app_role, "CREATE TEMP TABLE audit_auditchainhead (LIKE public.audit_auditchainhead)")
    as_role(app_role, "INSERT INTO audit_auditchainhead (organisation_id, sequence, hash, purged_through, time_ordered_from)"
                      " VALUES (%s, 0, repeat('0', 64), 0, 1)", [tenant.organisation.id])
    as_role(app_role, "GRANT ALL ON audit_auditchainhead TO PUBLIC")

    as_role(app_role, "INSERT INTO audit_auditevent (id, organisation_id, actor, action, target, details)"
                      " VALUES ('aud_appended', %s, 'x', 'key.updated', 'key_z', '{}')", [tenant.organisation.id])

    assert as_role(app_role, "SELECT sequence FROM public.audit_auditevent WHERE id = 'aud_appended'") == [(head.sequence + 1,)]


def _forged_erasure(app_role, tenant) -> None:
    """Temporary copies of the log naming a forged erasure as its newest event: the scrub reads the
    real log, where no erasure names the event."""
    victim = AuditEvent.objects.get(organisation_id=tenant.organisation.id, target="key_x")
    as_role(app_role, "CREATE TEMP TABLE audit_auditevent (LIKE public.audit_auditevent)")
    as_role(app_role, "CREATE TEMP TABLE audit_auditchainhead (LIKE public.audit_auditchainhead)")
    copy = "INSERT INTO audit_auditevent SELECT * FROM public.audit_auditevent WHERE id = %s"
    as_role(app_role, copy, [victim.pk])
    as_role(app_role, "UPDATE audit_auditevent SET id = 'aud_forged', action = 'person.erased', sequence = 999,"
                      " details = jsonb_build_object('scrubbed_events', jsonb_build_array(%s::text))", [victim.pk])
    as_role(app_role, copy, [victim.pk])
    as_role(app_role, "INSERT INTO audit_auditchainhead (organisation_id, sequence, hash, purged_through, time_ordered_from)"
                      " VALUES (%s, 999, repeat('0', 64), 0, 1)", [tenant.organisation.id])
    as_role(app_role, "GRANT ALL ON audit_auditevent, audit_auditchainhead TO PUBLIC")

    with pytest.raises(DatabaseError, match="scrubbed only by the erasure"), transaction.atomic():
        as_role(app_role, "SELECT audit_event_scrub(%s, 'aud_forged', true, ARRAY[]::text[])", [victim.pk])


# Every SECURITY DEFINER function of the schema and how a session would shadow what it reads.
SHADOWING = {
    "audit_retention_purge(timestamp with time zone)": _forged_retention,
    "audit_event_chain()": _forged_chain_head,
    "audit_event_scrub(text,text,boolean,text[])": _forged_erasure,
}


def _functions(condition: str) -> dict[str, list[str]]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT oid::regprocedure::text, coalesce(proconfig, '{}') FROM pg_proc"
            f" WHERE pronamespace = 'public'::regnamespace AND ({condition})"
        )
        return dict(cursor.fetchall())


def test_every_security_definer_function_has_a_shadowing_probe():
    """Issue 28: the functions come from `pg_proc`, so one added later fails here until it has a probe."""
    assert set(_functions("prosecdef")) == set(SHADOWING)


def test_every_function_of_the_log_searches_temporary_tables_last():
    """Issue 28: `search_path = pg_catalog, public` searched the session's temporary tables first."""
    functions = _functions("prosecdef OR proname LIKE 'audit\\_%'")

    assert len(functions) >= 10
    assert {name: config for name, config in functions.items() if "search_path=pg_catalog, public, pg_temp" not in config} == {}


@pytest.mark.parametrize("function", sorted(SHADOWING))
def test_a_temporary_table_never_shadows_what_a_security_definer_function_reads(app_role, tenant, function):
    """Issue 28: as the service's role, temporary tables named like the ones each SECURITY DEFINER
    function reads change nothing it does: the real log stays whole and its chain verifies. The DDL
    guard, which refuses a temporary table named like the log's, is off here: a database migrated
    by a role that is not a superuser has none."""
    before = _events(tenant)
    with connection.cursor() as cursor:
        cursor.execute("ALTER EVENT TRIGGER audit_log_ddl_guard DISABLE")

    SHADOWING[function](app_role, tenant)

    with connection.cursor() as cursor:
        cursor.execute("DISCARD TEMP")  # this test's own reads below see the real tables again
    assert before <= _events(tenant)
    assert all(report.intact for report in audit_chains_verify(organisation_id=tenant.organisation.id))


def _events(tenant) -> set[tuple[str, str, str]]:
    events = AuditEvent.objects.filter(organisation_id=tenant.organisation.id)
    return {(event.id, event.target, json.dumps(event.details, sort_keys=True)) for event in events}


# --- a scrub only for the erasure that names the event (issue 28) --------------------------------


def test_the_service_role_cannot_scrub_an_event_no_erasure_names(app_role, tenant):
    """Issue 28: `audit_event_scrub(<any event id>, …)` blanked a `key.created` event as readily as
    an erasure's. The database scrubs only what the newest `person.erased` event lists."""
    key_created = audit_event_record(caller=Caller.system(organisation_id=tenant.organisation.id, actor="test"), action="key.created", target="key_new")
    erasure = audit_event_record(
        caller=Caller.system(organisation_id=tenant.organisation.id, actor="test"), action="person.erased", target="", details={"scrubbed_events": []}
    )

    for erasure_id in (key_created.pk, erasure.pk, "aud_missing"):
        with pytest.raises(DatabaseError, match="scrubbed only by the erasure"), transaction.atomic():
            as_role(app_role, "SELECT audit_event_scrub(%s, %s, true, ARRAY['{name}'])", [key_created.pk, erasure_id])

    assert AuditEvent.objects.get(pk=key_created.pk).target == "key_new"


def test_an_erasure_scrubs_only_while_it_is_the_newest_event_and_once(app_role, tenant):
    """An erasure's list is good for its own transaction: once another event follows, or once it
    scrubbed an event, calling the scrub with it again is refused."""
    first = audit_event_record(caller=Caller.system(organisation_id=tenant.organisation.id, actor="test"), action="memory.console_read", target="anna")
    second = audit_event_record(caller=Caller.system(organisation_id=tenant.organisation.id, actor="test"), action="memory.console_read", target="anna")
    erasure = audit_event_record(
        caller=Caller.system(organisation_id=tenant.organisation.id, actor="test"), action="person.erased", target="", details={"scrubbed_events": [first.pk, second.pk]}
    )
    assert as_role(app_role, "SELECT audit_event_scrub(%s, %s, true, ARRAY[]::text[])", [first.pk, erasure.pk]) == [(True,)]
    with pytest.raises(DatabaseError, match="scrubbed only by the erasure"), transaction.atomic():
        as_role(app_role, "SELECT audit_event_scrub(%s, %s, true, ARRAY[]::text[])", [first.pk, erasure.pk])
    audit_event_record(caller=Caller.system(organisation_id=tenant.organisation.id, actor="test"), action="key.updated", target="key_x")

    with pytest.raises(DatabaseError, match="scrubbed only by the erasure"), transaction.atomic():
        as_role(app_role, "SELECT audit_event_scrub(%s, %s, true, ARRAY[]::text[])", [second.pk, erasure.pk])

    assert (AuditEvent.objects.get(pk=first.pk).target, AuditEvent.objects.get(pk=second.pk).target) == ("", "anna")
    (report,) = audit_chains_verify(organisation_id=tenant.organisation.id)
    assert report.intact and report.scrubbed == 1


def test_audit_verify_reports_a_scrub_that_no_erasure_names(tenant):
    """Issue 28: `audit_verify` counted any blanked event as scrubbed. Blanked behind the triggers
    (as only a superuser can), a `key.created` event that no erasure lists is a problem."""
    event = audit_event_record(caller=Caller.system(organisation_id=tenant.organisation.id, actor="test"), action="key.created", target="key_new")
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE audit_auditevent DISABLE TRIGGER audit_event_append_only")
        cursor.execute("UPDATE audit_auditevent SET target = '', target_salt = NULL, scrubbed_at = clock_timestamp() WHERE id = %s", [event.pk])
        cursor.execute("ALTER TABLE audit_auditevent ENABLE ALWAYS TRIGGER audit_event_append_only")

    (report,) = audit_chains_verify(organisation_id=tenant.organisation.id)

    assert report.problems == [f"{event.pk}: scrubbed, but no later erasure names it"]
