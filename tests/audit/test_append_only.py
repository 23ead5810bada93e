"""R-11.1: nothing in the application can update or delete an audit event; the database refuses."""
import pytest
from django.db import DatabaseError, connection, transaction

from audit.models import AuditEvent
from audit.services import audit_event_record
from core_memory.base.callers import Caller

pytestmark = pytest.mark.django_db


@pytest.fixture
def event(tenant):
    return audit_event_record(caller=Caller.system(organisation_id=tenant.organisation.id, actor="test"), action="key.updated", target="key_x")


def assert_refused(operation) -> None:
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        operation()


def assert_unchanged(event) -> None:
    stored = AuditEvent.objects.get(pk=event.pk)
    assert (stored.action, stored.target, stored.at) == ("key.updated", "key_x", event.at)


def test_saving_a_changed_event_through_the_orm_is_refused(event):
    event.action = "key.deleted"

    assert_refused(event.save)

    assert_unchanged(event)


def test_a_queryset_update_is_refused(event):
    assert_refused(lambda: AuditEvent.objects.filter(pk=event.pk).update(target="key_y"))

    assert_unchanged(event)


def test_deleting_an_event_through_the_orm_is_refused(event):
    assert_refused(event.delete)

    assert_unchanged(event)


def test_a_queryset_delete_is_refused(event):
    assert_refused(AuditEvent.objects.all().delete)

    assert_unchanged(event)


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE audit_auditevent SET details = '{}'::jsonb, target = 'key_y'",
        "DELETE FROM audit_auditevent",
    ],
)
def test_raw_sql_cannot_change_or_remove_an_event(event, statement):
    def run():
        with connection.cursor() as cursor:
            cursor.execute(statement)

    assert_refused(run)

    assert_unchanged(event)


def test_appending_events_stays_possible(event, tenant):
    audit_event_record(caller=Caller.system(organisation_id=tenant.organisation.id, actor="test"), action="key.revoked", target="key_x")

    actions = AuditEvent.objects.filter(organisation_id=tenant.organisation.id, target="key_x").order_by("id").values_list("action", flat=True)
    assert list(actions) == ["key.updated", "key.revoked"]


# --- What a session can do against the log (issue 11: "audit log erasable") ----------------------

APPLICATION_ROLE = "core_test_application"


@pytest.fixture
def application_role(event):
    """A role like the one the service connects as outside development: not a superuser, and
    (the worst case) the owner of the log's tables and functions, as when it ran the migrations.
    Made inside the test's transaction, so it is gone afterwards."""
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE ROLE {APPLICATION_ROLE} NOLOGIN")
        cursor.execute(f"GRANT ALL ON SCHEMA public TO {APPLICATION_ROLE}")
        for table in ("audit_auditevent", "audit_auditchainhead"):
            cursor.execute(f"ALTER TABLE {table} OWNER TO {APPLICATION_ROLE}")
        for function in ("audit_event_append_only()", "audit_event_chain()"):
            cursor.execute(f"ALTER FUNCTION {function} OWNER TO {APPLICATION_ROLE}")
        cursor.execute(f"GRANT EXECUTE ON FUNCTION audit_retention_purge(timestamptz) TO {APPLICATION_ROLE}")
    return APPLICATION_ROLE


# A session's own "catalogue" that says it is a superuser.
SUPERUSER_BY_A_TEMPORARY_TABLE = [
    "CREATE TEMP TABLE pg_roles (rolname name, rolsuper boolean)",
    "INSERT INTO pg_roles VALUES (current_user, true)",
]


def as_role(role: str, statements: list[str]) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL ROLE {role}")
        for statement in statements:
            cursor.execute(statement)


@pytest.mark.parametrize(
    "statements",
    [
        pytest.param(["SET LOCAL core.audit_purge = 'on'", "DELETE FROM audit_auditevent"], id="the-old-purge-setting"),
        pytest.param(["DELETE FROM audit_auditevent"], id="delete"),
        pytest.param(["UPDATE audit_auditevent SET target = 'key_y'"], id="update"),
        pytest.param(["TRUNCATE audit_auditevent"], id="truncate"),
        pytest.param(["ALTER TABLE audit_auditevent DISABLE TRIGGER audit_event_append_only", "DELETE FROM audit_auditevent"], id="disable-trigger"),
        pytest.param(["ALTER TABLE audit_auditevent DISABLE TRIGGER ALL"], id="disable-all-triggers"),
        pytest.param(["DROP TRIGGER audit_event_append_only ON audit_auditevent"], id="drop-trigger"),
        pytest.param(
            ["CREATE OR REPLACE FUNCTION audit_event_append_only() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN OLD; END $$"],
            id="replace-trigger-function",
        ),
        pytest.param(["DROP TABLE audit_auditevent"], id="drop-table"),
        pytest.param(["ALTER TABLE audit_auditevent RENAME TO audit_old"], id="rename-table"),
        pytest.param(["SET LOCAL session_replication_role = replica", "DELETE FROM audit_auditevent"], id="replication-role"),
        pytest.param(["ALTER FUNCTION audit_event_append_only() RENAME TO harmless"], id="rename-trigger-function"),
        pytest.param(["ALTER TRIGGER audit_event_append_only ON audit_auditevent RENAME TO harmless"], id="rename-trigger"),
        # Issue 28: the guard and the trigger asked `pg_roles` with `pg_temp` searched first.
        pytest.param(
            [*SUPERUSER_BY_A_TEMPORARY_TABLE, "ALTER TABLE audit_auditevent DISABLE TRIGGER audit_event_append_only", "DELETE FROM audit_auditevent"],
            id="temporary-pg_roles-then-disable-trigger",
        ),
        pytest.param([*SUPERUSER_BY_A_TEMPORARY_TABLE, "TRUNCATE audit_auditevent"], id="temporary-pg_roles-then-truncate"),
    ],
)
def test_the_application_role_cannot_remove_or_change_events_by_any_door(application_role, event, statements):
    """R-11.1, issue 11: `SET LOCAL core.audit_purge='on'` was open to any role; TRUNCATE, disabling
    the trigger and `session_replication_role=replica` removed or changed events. PostgreSQL now
    refuses each to a role that is not a superuser, even one that owns the table."""
    with pytest.raises(DatabaseError), transaction.atomic():
        as_role(application_role, statements)

    assert_unchanged(event)


def test_a_superuser_session_in_replica_mode_still_meets_the_triggers(event):
    """The triggers fire ALWAYS: `session_replication_role = replica` skips none of them."""
    def run():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL session_replication_role = replica")
            cursor.execute("DELETE FROM audit_auditevent")

    assert_refused(run)

    assert_unchanged(event)


def test_the_application_role_may_run_the_purge_which_removes_only_expired_events(application_role, event):
    """R-11.1: the purge is a function running as its own role; calling it deletes nothing young."""
    with connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL ROLE {application_role}")
        cursor.execute("SELECT audit_retention_purge(now() + interval '100 years')")
        purged = cursor.fetchone()[0]
        cursor.execute("RESET ROLE")

    assert purged == 0
    assert_unchanged(event)


@pytest.mark.django_db(transaction=True)
def test_a_login_role_cannot_take_on_the_purge_role():
    """Only the purge function runs as `core_audit_purge`; a session of another role cannot
    become it (PostgreSQL's SET ROLE needs membership, which the migration grants nobody)."""
    import psycopg

    settings = connection.settings_dict
    login = "core_test_login"
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE ROLE {login} LOGIN")
        cursor.execute(f"GRANT SELECT, INSERT ON audit_auditevent, audit_auditchainhead TO {login}")
    try:
        with psycopg.connect(host=settings["HOST"], port=settings["PORT"] or None, dbname=settings["NAME"], user=login) as session:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                session.execute("SET ROLE core_audit_purge")
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP OWNED BY {login}")
            cursor.execute(f"DROP ROLE {login}")
