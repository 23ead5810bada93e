"""`manage.py database_roles --app-role core_app`: the role the service connects as, with only
the grants it needs (docs/decisions.md "Audit").

Run it as the role that migrated (a superuser, or the tables' owner with the right to grant
the audit functions), after every `migrate`: it grants on the tables that exist now. The
service's role may read and write the application's tables, but of the audit log only read
and append (the database dates and chains each event), read the chain heads, and run the
retention purge and the erasure's scrub, each of which runs as its own role and can only do
its one thing. It owns nothing, so it can neither change the log's structure nor add triggers.
"""
from __future__ import annotations

import re

from django.core.management.base import BaseCommand, CommandError
from django.db import connection, transaction

ROLE_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
# Tables the service reads and appends to, or only reads; every other table of the schema it
# may read and write.
APPEND_ONLY = ("audit_auditevent",)
READ_ONLY = ("audit_auditchainhead", "django_migrations")
FUNCTIONS = ("audit_retention_purge(timestamptz)", "audit_event_scrub(text, text, boolean, text[])")


def app_role_grant(*, role: str) -> None:
    """Creates `role` (LOGIN, no superuser, no role or database creation) when missing, and
    grants it exactly what the service needs on the tables that exist now."""
    if not ROLE_NAME.match(role):
        raise CommandError("The role's name is lowercase letters, digits and underscores.")
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT rolsuper FROM pg_roles WHERE rolname = %s", [role])
        found = cursor.fetchone()
        if found is None:
            cursor.execute(f"CREATE ROLE {role} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS")
        elif found[0]:
            raise CommandError(f"{role} is a superuser: the service's role must not be one.")
        cursor.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        tables = sorted(row[0] for row in cursor.fetchall())
        cursor.execute(f"GRANT USAGE ON SCHEMA public TO {role}")
        cursor.execute(f"REVOKE CREATE ON SCHEMA public FROM {role}")
        cursor.execute(f"REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {role}")
        for table in tables:
            if table in APPEND_ONLY:
                rights = "SELECT, INSERT"
            elif table in READ_ONLY:
                rights = "SELECT"
            else:
                rights = "SELECT, INSERT, UPDATE, DELETE"
            cursor.execute(f'GRANT {rights} ON TABLE "{table}" TO {role}')
        cursor.execute(f"GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO {role}")
        for function in FUNCTIONS:
            cursor.execute(f"GRANT EXECUTE ON FUNCTION {function} TO {role}")


class Command(BaseCommand):
    help = "Create or update the role the service connects as, with only the grants it needs."

    def add_arguments(self, parser):
        parser.add_argument("--app-role", required=True, help="the role's name, e.g. core_app")

    def handle(self, *args, app_role: str, **options):
        app_role_grant(role=app_role)
        self.stdout.write(f"{app_role}: granted.")
