"""The log's functions no longer read a session's temporary tables, and a scrub blanks only
what an erasure names (docs/decisions.md "Audit").

- Every function of the log runs with `search_path = pg_catalog, public, pg_temp`. A path that
  does not name `pg_temp` searches it *first*: a session could create a temporary
  `organisations_organisation` (a retention of -36500 days), `audit_auditchainhead` or
  `pg_roles` and have the purge, the chain or the DDL guard read it instead of the real one.
  With `pg_temp` last, the real tables and catalogues always win.
- `audit_event_scrub(event_id, erasure_id, blank_target, paths)` replaces the scrub that took
  any event id. It blanks an event only when `erasure_id` is a `person.erased` event of the
  same organisation that is its chain's newest (written in the erasing transaction, which
  holds the chain head until it commits), that lists the event under `scrubbed_events`, and
  that came after it; an erasure's own event is never scrubbed, and each erasure scrubs an
  event at most once. The scrub records the erasure in `scrubbed_by`, so `audit_verify`
  checks every scrubbed event against the erasure that names it (the erasure's details are
  in the chain).
- Events scrubbed before this migration named no erasure: their chain head remembers when
  scrubs began to be named (`scrubs_named_from`), and the verifier accepts those as before.
"""
from django.db import migrations, models

SEARCH_PATH = "pg_catalog, public, pg_temp"
# Every function of the log, with its arguments (the guard's and the chain's included).
FUNCTIONS = (
    "audit_digest_part(text)",
    "audit_event_digest(text, bigint, text, timestamptz, text, text, text, jsonb)",
    "audit_salt()",
    "audit_commitment(text, text)",
    "audit_link_digest(text, bigint, text, timestamptz, text, text, text, text)",
    "audit_event_chain()",
    "audit_event_append_only()",
    "audit_retention_purge(timestamptz)",
    "audit_log_ddl_guard_protects(oid, oid, text)",
    "audit_log_ddl_guard()",
)

FORWARD = "\n".join(f"ALTER FUNCTION {function} SET search_path = {SEARCH_PATH};" for function in FUNCTIONS) + f"""
UPDATE audit_auditchainhead SET scrubs_named_from = clock_timestamp();

DROP FUNCTION audit_event_scrub(text, boolean, text[]);
GRANT UPDATE (scrubbed_by) ON audit_auditevent TO core_audit_scrub;
GRANT SELECT ON audit_auditchainhead TO core_audit_scrub;

-- Blanks an event's target (to '') and the values at `paths` of its details (each a JSON path
-- as PostgreSQL's text[] literal, e.g. '{{search}}'; a path that is not there is skipped) to
-- "[erased]", and drops the salts of what it blanked — only for the erasure that names it.
CREATE FUNCTION audit_event_scrub(event_id text, erasure_id text, blank_target boolean, paths text[]) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {SEARCH_PATH} AS $$
DECLARE
    event record;
    erasure record;
    scrubbed jsonb;
    path text;
    blanked boolean := false;
BEGIN
    SELECT organisation_id, sequence, action, target, details, scrubbed_by INTO event
    FROM audit_auditevent WHERE id = event_id FOR UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    SELECT erased.organisation_id, erased.sequence, erased.details INTO erasure
    FROM audit_auditevent AS erased
    JOIN audit_auditchainhead AS head ON head.organisation_id = erased.organisation_id AND head.sequence = erased.sequence
    WHERE erased.id = erasure_id AND erased.action = 'person.erased';
    IF NOT FOUND OR erasure.organisation_id <> event.organisation_id OR erasure.sequence <= event.sequence
        OR event.action = 'person.erased' OR event.scrubbed_by IS NOT DISTINCT FROM erasure_id
        OR NOT COALESCE(erasure.details -> 'scrubbed_events' ? event_id, false) THEN
        RAISE EXCEPTION 'an audit event is scrubbed only by the erasure that names it (% refused)', event_id
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    scrubbed := event.details;
    FOREACH path IN ARRAY COALESCE(paths, ARRAY[]::text[]) LOOP
        IF scrubbed #> path::text[] IS NOT NULL THEN
            scrubbed := jsonb_set(scrubbed, path::text[], '"[erased]"'::jsonb, false);
            blanked := true;
        END IF;
    END LOOP;
    IF NOT blanked AND NOT blank_target THEN
        RETURN false;
    END IF;
    UPDATE audit_auditevent SET
        target = CASE WHEN blank_target THEN '' ELSE target END,
        target_salt = CASE WHEN blank_target THEN NULL ELSE target_salt END,
        details = scrubbed,
        details_salt = CASE WHEN blanked THEN NULL ELSE details_salt END,
        scrubbed_at = clock_timestamp(),
        scrubbed_by = erasure_id
    WHERE id = event_id;
    RETURN true;
END;
$$;
ALTER FUNCTION audit_event_scrub(text, text, boolean, text[]) OWNER TO core_audit_scrub;
REVOKE ALL ON FUNCTION audit_event_scrub(text, text, boolean, text[]) FROM PUBLIC;
"""

# Back to the paths before (the scrub that took any event id is not brought back: 0004's own
# backward step drops it anyway).
BACKWARD = "\n".join(
    f"ALTER FUNCTION {function} SET search_path = {'pg_catalog' if function in ('audit_digest_part(text)', 'audit_salt()') else 'pg_catalog, public'};"
    for function in FUNCTIONS
) + """
DROP FUNCTION IF EXISTS audit_event_scrub(text, text, boolean, text[]);
"""


class Migration(migrations.Migration):

    dependencies = [("audit", "0004_time_and_scrubbing")]

    operations = [
        migrations.AddField(
            model_name="auditevent",
            name="scrubbed_by",
            field=models.CharField(editable=False, max_length=40, null=True, verbose_name="scrubbed by"),
        ),
        migrations.AddField(
            model_name="auditchainhead",
            name="scrubs_named_from",
            field=models.DateTimeField(null=True),
        ),
        migrations.RunSQL(FORWARD, BACKWARD),
    ]
