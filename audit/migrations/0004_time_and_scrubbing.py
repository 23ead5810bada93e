"""The database dates each event, and an erased person's data can leave the log's events while
their chain still verifies (docs/decisions.md "Audit" and "Erasing a person").

- `at` is the database's clock, read when the event takes its place in the chain and never
  earlier than the event before it: whatever an INSERT supplies is replaced, so nobody can
  back-date an event. `audit_verify` checks that times never go back from
  `time_ordered_from` on (earlier events kept their transaction-start times, which could).
- The chain covers a salted commitment to `target` and to `details`, not the values: each
  event gets two random salts, and `hash` covers SHA-256(salt, value). While the salt is
  there the verifier checks the value against its commitment. Scrubbing (erasing a person)
  blanks the value and drops the salt; the commitment stays in the chain, and without the
  salt it cannot be matched to a guessed value.
- Scrubbing is `audit_event_scrub(id, blank_target, paths)`, a SECURITY DEFINER function
  owned by the NOLOGIN role `core_audit_scrub`: the only UPDATE the append-only trigger lets
  through, and it can only blank (target to '', a JSON path's value to "[erased]"), never write.
- The chain's trigger runs as the log's owner (SECURITY DEFINER), so the service's role needs
  no right on the chain head but SELECT; the purge and the scrub are no longer PUBLIC.
- Existing events are chained again once under the new digest (their heads change).
"""
from django.db import migrations, models
from django.db.models.functions import Now

GENESIS = "0" * 64

FORWARD = f"""
CREATE FUNCTION audit_salt() RETURNS text
LANGUAGE sql VOLATILE SET search_path = pg_catalog AS $$
    SELECT encode(sha256(convert_to(gen_random_uuid()::text || gen_random_uuid()::text, 'UTF8')), 'hex')
$$;

CREATE FUNCTION audit_commitment(salt text, value text) RETURNS text
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, public AS $$
    SELECT encode(sha256(convert_to(audit_digest_part(salt) || audit_digest_part(value), 'UTF8')), 'hex')
$$;

-- The digest audit.chain.event_digest recomputes: each part length-prefixed, UTF-8, SHA-256.
CREATE FUNCTION audit_link_digest(
    organisation_id text, sequence bigint, previous_hash text, at timestamptz, actor text, action text,
    target_commitment text, details_commitment text
) RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, public AS $$
    SELECT encode(sha256(convert_to(
        audit_digest_part(previous_hash) || audit_digest_part(organisation_id) || audit_digest_part(sequence::text)
        || audit_digest_part(to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'))
        || audit_digest_part(actor) || audit_digest_part(action)
        || audit_digest_part(target_commitment) || audit_digest_part(details_commitment),
    'UTF8')), 'hex')
$$;

CREATE OR REPLACE FUNCTION audit_event_chain() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE
    head record;
BEGIN
    INSERT INTO audit_auditchainhead (organisation_id, sequence, hash, purged_through, time_ordered_from)
        VALUES (NEW.organisation_id, 0, '{GENESIS}', 0, 1) ON CONFLICT (organisation_id) DO NOTHING;
    -- The head row's lock orders an organisation's events: the next waits for this one's commit.
    SELECT sequence, hash, at INTO head FROM audit_auditchainhead WHERE organisation_id = NEW.organisation_id FOR UPDATE;
    NEW.sequence := head.sequence + 1;
    NEW.previous_hash := head.hash;
    -- Read with the head locked, so times follow the chain; never before the event before it.
    NEW.at := GREATEST(clock_timestamp(), head.at);
    NEW.scrubbed_at := NULL;
    NEW.target_salt := audit_salt();
    NEW.details_salt := audit_salt();
    NEW.target_commitment := audit_commitment(NEW.target_salt, NEW.target);
    NEW.details_commitment := audit_commitment(NEW.details_salt, NEW.details::text);
    NEW.hash := audit_link_digest(
        NEW.organisation_id, NEW.sequence, NEW.previous_hash, NEW.at, NEW.actor, NEW.action,
        NEW.target_commitment, NEW.details_commitment
    );
    UPDATE audit_auditchainhead SET sequence = NEW.sequence, hash = NEW.hash, at = NEW.at
    WHERE organisation_id = NEW.organisation_id;
    RETURN NEW;
END;
$$;

-- Chain the existing events again under the new digest, oldest first; time is checked from the next.
ALTER TABLE audit_auditevent DISABLE TRIGGER audit_event_append_only;
DO $$
DECLARE
    event record;
    previous text;
    organisation text := NULL;
    new_target_salt text;
    new_details_salt text;
    new_target_commitment text;
    new_details_commitment text;
    digest text;
BEGIN
    FOR event IN SELECT * FROM audit_auditevent WHERE sequence IS NOT NULL ORDER BY organisation_id, sequence LOOP
        IF organisation IS DISTINCT FROM event.organisation_id THEN
            organisation := event.organisation_id;
            previous := event.previous_hash;  -- genesis, or the hash of an event purged before it
        END IF;
        new_target_salt := audit_salt();
        new_details_salt := audit_salt();
        new_target_commitment := audit_commitment(new_target_salt, event.target);
        new_details_commitment := audit_commitment(new_details_salt, event.details::text);
        digest := audit_link_digest(
            event.organisation_id, event.sequence, previous, event.at, event.actor, event.action,
            new_target_commitment, new_details_commitment
        );
        UPDATE audit_auditevent SET previous_hash = previous, hash = digest,
            target_salt = new_target_salt, details_salt = new_details_salt,
            target_commitment = new_target_commitment, details_commitment = new_details_commitment
        WHERE id = event.id;
        previous := digest;
        UPDATE audit_auditchainhead SET hash = digest, at = event.at
        WHERE organisation_id = event.organisation_id AND sequence = event.sequence;
    END LOOP;
    UPDATE audit_auditchainhead SET time_ordered_from = sequence + 1;
END;
$$;
ALTER TABLE audit_auditevent ENABLE ALWAYS TRIGGER audit_event_append_only;

-- Besides the purge's DELETE, one UPDATE passes: the scrub's, which changes only what it may blank.
CREATE OR REPLACE FUNCTION audit_event_append_only() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, public AS $$
BEGIN
    IF TG_OP = 'DELETE' AND current_user = 'core_audit_purge' THEN
        RETURN OLD;
    END IF;
    IF TG_OP = 'UPDATE' AND current_user = 'core_audit_scrub'
        AND (NEW.id, NEW.organisation_id, NEW.sequence, NEW.previous_hash, NEW.hash, NEW.at, NEW.actor, NEW.action,
             NEW.target_commitment, NEW.details_commitment)
        IS NOT DISTINCT FROM (OLD.id, OLD.organisation_id, OLD.sequence, OLD.previous_hash, OLD.hash, OLD.at, OLD.actor, OLD.action,
             OLD.target_commitment, OLD.details_commitment) THEN
        RETURN NEW;
    END IF;
    IF TG_OP = 'TRUNCATE' AND (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        RETURN NULL;
    END IF;
    RAISE EXCEPTION 'audit events are append-only (% refused)', TG_OP USING ERRCODE = 'insufficient_privilege';
END;
$$;

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'core_audit_scrub') THEN
        CREATE ROLE core_audit_scrub NOLOGIN;
    END IF;
EXCEPTION
    WHEN duplicate_object THEN NULL;  -- another database of this server made it meanwhile
    WHEN insufficient_privilege THEN
        RAISE EXCEPTION 'Creating the role core_audit_scrub needs CREATEROLE: have a superuser run '
            '"CREATE ROLE core_audit_scrub NOLOGIN" once, then migrate again.';
END;
$$;
GRANT USAGE ON SCHEMA public TO core_audit_scrub;
GRANT SELECT, UPDATE (target, details, target_salt, details_salt, scrubbed_at) ON audit_auditevent TO core_audit_scrub;
GRANT SELECT ON audit_auditevent TO core_audit_scrub;

-- Blanks an event's target (to '') and the values at `paths` of its details (each a JSON path
-- as PostgreSQL's text[] literal, e.g. '{{search}}'; a path that is not there is skipped) to
-- "[erased]", and drops the salts of what it blanked. It cannot write anything else.
CREATE FUNCTION audit_event_scrub(event_id text, blank_target boolean, paths text[]) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE
    event record;
    scrubbed jsonb;
    path text;
    blanked boolean := false;
BEGIN
    SELECT target, details INTO event FROM audit_auditevent WHERE id = event_id FOR UPDATE;
    IF NOT FOUND THEN
        RETURN false;
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
        scrubbed_at = clock_timestamp()
    WHERE id = event_id;
    RETURN true;
END;
$$;
ALTER FUNCTION audit_event_scrub(text, boolean, text[]) OWNER TO core_audit_scrub;

-- Neither the purge nor the scrub is anybody's by default: the service's role is granted them
-- (manage.py database_roles).
REVOKE ALL ON FUNCTION audit_retention_purge(timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION audit_event_scrub(text, boolean, text[]) FROM PUBLIC;
"""

BACKWARD = """
DROP FUNCTION IF EXISTS audit_event_scrub(text, boolean, text[]);
GRANT EXECUTE ON FUNCTION audit_retention_purge(timestamptz) TO PUBLIC;
CREATE OR REPLACE FUNCTION audit_event_append_only() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, public AS $$
BEGIN
    IF TG_OP = 'DELETE' AND current_user = 'core_audit_purge' THEN
        RETURN OLD;
    END IF;
    IF TG_OP = 'TRUNCATE' AND (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        RETURN NULL;
    END IF;
    RAISE EXCEPTION 'audit events are append-only (% refused)', TG_OP USING ERRCODE = 'insufficient_privilege';
END;
$$;
"""


class Migration(migrations.Migration):

    dependencies = [("audit", "0003_hash_chain")]

    operations = [
        migrations.AlterField(
            model_name="auditevent",
            name="at",
            field=models.DateTimeField(db_default=Now(), editable=False, verbose_name="at"),
        ),
        migrations.AddField(
            model_name="auditevent",
            name="target_salt",
            field=models.CharField(editable=False, max_length=64, null=True, verbose_name="target salt"),
        ),
        migrations.AddField(
            model_name="auditevent",
            name="details_salt",
            field=models.CharField(editable=False, max_length=64, null=True, verbose_name="details salt"),
        ),
        migrations.AddField(
            model_name="auditevent",
            name="target_commitment",
            field=models.CharField(blank=True, default="", editable=False, max_length=64, verbose_name="target commitment"),
        ),
        migrations.AddField(
            model_name="auditevent",
            name="details_commitment",
            field=models.CharField(blank=True, default="", editable=False, max_length=64, verbose_name="details commitment"),
        ),
        migrations.AddField(
            model_name="auditevent",
            name="scrubbed_at",
            field=models.DateTimeField(editable=False, null=True, verbose_name="scrubbed at"),
        ),
        migrations.AddField(
            model_name="auditchainhead",
            name="at",
            field=models.DateTimeField(null=True),
        ),
        migrations.AddField(
            model_name="auditchainhead",
            name="time_ordered_from",
            field=models.BigIntegerField(default=1),
        ),
        migrations.RunSQL(FORWARD, BACKWARD),
    ]
