"""The audit log made tamper-evident and its purge closed to sessions.

- Every event becomes a link of its organisation's hash chain, filled in by a BEFORE INSERT
  trigger so that no way of inserting skips it; existing events are chained in id order.
- The purge no longer opens a door by a session setting (`core.audit_purge`, which any role
  could set): it is `audit_retention_purge(now)`, a SECURITY DEFINER function owned by the
  NOLOGIN role `core_audit_purge`, and the trigger lets a DELETE through only for that role.
  The function removes only expired events, at the start of each chain.
- TRUNCATE is refused (a superuser's TRUNCATE passes: test databases are flushed that way,
  and a superuser can disable any trigger anyway). All the log's triggers fire ALWAYS, so
  `session_replication_role = replica` (superusers only) skips none of them.
- An event trigger refuses DDL on the log's tables and functions (disabling or dropping a
  trigger, replacing a function, dropping the table) to every role but a superuser. Creating
  it needs a superuser; a migration run by another role skips it with a warning.

What a superuser can still do is in docs/decisions.md ("Audit").
"""
from django.db import migrations, models

GENESIS = "0" * 64
LOG_OBJECTS = r"(audit_auditevent|audit_auditchainhead|audit_event_|audit_digest_part|audit_retention_purge|audit_log_ddl_guard)"
LOG_TRIGGERS = "('audit_event_append_only', 'audit_event_chain', 'audit_event_no_truncate')"

FORWARD = f"""
CREATE FUNCTION audit_digest_part(value text) RETURNS text
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog AS $$ SELECT octet_length(value)::text || ':' || value $$;

-- The digest audit.chain.event_digest recomputes: each part length-prefixed, UTF-8, SHA-256.
CREATE FUNCTION audit_event_digest(
    organisation_id text, sequence bigint, previous_hash text, at timestamptz, actor text, action text, target text, details jsonb
) RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, public AS $$
    SELECT encode(sha256(convert_to(
        audit_digest_part(previous_hash) || audit_digest_part(organisation_id) || audit_digest_part(sequence::text)
        || audit_digest_part(to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'))
        || audit_digest_part(actor) || audit_digest_part(action) || audit_digest_part(target)
        || audit_digest_part(details::text),
    'UTF8')), 'hex')
$$;

CREATE FUNCTION audit_event_chain() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, public AS $$
DECLARE
    head record;
BEGIN
    INSERT INTO audit_auditchainhead (organisation_id, sequence, hash, purged_through)
        VALUES (NEW.organisation_id, 0, '{GENESIS}', 0) ON CONFLICT (organisation_id) DO NOTHING;
    -- The head row's lock orders an organisation's events: the next waits for this one's commit.
    SELECT sequence, hash INTO head FROM audit_auditchainhead WHERE organisation_id = NEW.organisation_id FOR UPDATE;
    NEW.sequence := head.sequence + 1;
    NEW.previous_hash := head.hash;
    NEW.hash := audit_event_digest(
        NEW.organisation_id, NEW.sequence, NEW.previous_hash, NEW.at, NEW.actor, NEW.action, NEW.target, NEW.details
    );
    UPDATE audit_auditchainhead SET sequence = NEW.sequence, hash = NEW.hash WHERE organisation_id = NEW.organisation_id;
    RETURN NEW;
END;
$$;

-- Chain the events written before this migration, oldest first.
ALTER TABLE audit_auditevent DISABLE TRIGGER audit_event_append_only;
DO $$
DECLARE
    event record;
    previous text;
    organisation text := NULL;
    position bigint;
    digest text;
BEGIN
    FOR event IN SELECT * FROM audit_auditevent ORDER BY organisation_id, id LOOP
        IF organisation IS DISTINCT FROM event.organisation_id THEN
            organisation := event.organisation_id;
            previous := '{GENESIS}';
            position := 0;
        END IF;
        position := position + 1;
        digest := audit_event_digest(
            event.organisation_id, position, previous, event.at, event.actor, event.action, event.target, event.details
        );
        UPDATE audit_auditevent SET sequence = position, previous_hash = previous, hash = digest WHERE id = event.id;
        previous := digest;
    END LOOP;
    INSERT INTO audit_auditchainhead (organisation_id, sequence, hash, purged_through)
        SELECT DISTINCT ON (organisation_id) organisation_id, sequence, hash, 0
        FROM audit_auditevent ORDER BY organisation_id, sequence DESC;
END;
$$;
ALTER TABLE audit_auditevent ENABLE ALWAYS TRIGGER audit_event_append_only;

CREATE TRIGGER audit_event_chain BEFORE INSERT ON audit_auditevent FOR EACH ROW EXECUTE FUNCTION audit_event_chain();
ALTER TABLE audit_auditevent ENABLE ALWAYS TRIGGER audit_event_chain;

-- No session setting opens the door any more: only the purge function's role may delete.
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
CREATE TRIGGER audit_event_no_truncate BEFORE TRUNCATE ON audit_auditevent
FOR EACH STATEMENT EXECUTE FUNCTION audit_event_append_only();
ALTER TABLE audit_auditevent ENABLE ALWAYS TRIGGER audit_event_no_truncate;

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'core_audit_purge') THEN
        CREATE ROLE core_audit_purge NOLOGIN;
    END IF;
EXCEPTION
    WHEN duplicate_object THEN NULL;  -- another database of this server made it meanwhile
    WHEN insufficient_privilege THEN
        RAISE EXCEPTION 'Creating the role core_audit_purge needs CREATEROLE: have a superuser run '
            '"CREATE ROLE core_audit_purge NOLOGIN" once, then migrate again.';
END;
$$;
GRANT USAGE ON SCHEMA public TO core_audit_purge;
GRANT SELECT, DELETE ON audit_auditevent TO core_audit_purge;
GRANT SELECT, UPDATE ON audit_auditchainhead TO core_audit_purge;
GRANT SELECT ON organisations_organisation TO core_audit_purge;

-- Removes, per organisation, the start of its chain up to its first event that is not yet
-- older than the retention (events of a deleted organisation: 365 days). `now` may only lie
-- in the past: a caller cannot purge the future.
CREATE FUNCTION audit_retention_purge(requested_now timestamptz) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE
    purge_now timestamptz := LEAST(requested_now, clock_timestamp());
    chain record;
    boundary bigint;
    removed bigint;
    total bigint := 0;
BEGIN
    FOR chain IN
        SELECT head.organisation_id, head.sequence, COALESCE(organisation.audit_retention_days, 365) AS days
        FROM audit_auditchainhead AS head
        LEFT JOIN organisations_organisation AS organisation ON organisation.id = head.organisation_id
        ORDER BY head.organisation_id
    LOOP
        SELECT MIN(event.sequence) INTO boundary FROM audit_auditevent AS event
        WHERE event.organisation_id = chain.organisation_id AND event.at >= purge_now - make_interval(days => chain.days);
        boundary := COALESCE(boundary, chain.sequence + 1);
        DELETE FROM audit_auditevent WHERE organisation_id = chain.organisation_id AND sequence < boundary;
        GET DIAGNOSTICS removed = ROW_COUNT;
        IF removed > 0 THEN
            UPDATE audit_auditchainhead SET purged_through = boundary - 1 WHERE organisation_id = chain.organisation_id;
            total := total + removed;
        END IF;
    END LOOP;
    RETURN total;
END;
$$;
ALTER FUNCTION audit_retention_purge(timestamptz) OWNER TO core_audit_purge;

-- The log's objects, also under another name: its tables by the triggers they carry, its
-- functions by the triggers that call them, its triggers by their table.
CREATE FUNCTION audit_log_ddl_guard_protects(class oid, object oid, identity text) RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, public AS $$
    SELECT identity ~ '{LOG_OBJECTS}'
        OR (class = 'pg_class'::regclass AND EXISTS (
            SELECT 1 FROM pg_trigger WHERE tgrelid = object AND tgname IN {LOG_TRIGGERS}))
        OR (class = 'pg_proc'::regclass AND (
            EXISTS (SELECT 1 FROM pg_trigger WHERE tgfoid = object AND tgname IN {LOG_TRIGGERS})
            OR EXISTS (SELECT 1 FROM pg_event_trigger WHERE evtfoid = object)))
        OR (class = 'pg_trigger'::regclass AND EXISTS (
            SELECT 1 FROM pg_trigger AS touched JOIN pg_trigger AS ours ON ours.tgrelid = touched.tgrelid
            WHERE touched.oid = object AND ours.tgname IN {LOG_TRIGGERS}))
$$;

CREATE FUNCTION audit_log_ddl_guard() RETURNS event_trigger
LANGUAGE plpgsql SET search_path = pg_catalog, public AS $$
DECLARE
    touched record;
BEGIN
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        RETURN;
    END IF;
    IF TG_EVENT = 'sql_drop' THEN
        FOR touched IN SELECT object_identity FROM pg_event_trigger_dropped_objects() LOOP
            IF touched.object_identity ~ '{LOG_OBJECTS}' THEN
                RAISE EXCEPTION 'the audit log''s structure changes only by a superuser (% refused)', TG_TAG
                    USING ERRCODE = 'insufficient_privilege';
            END IF;
        END LOOP;
    ELSE
        FOR touched IN SELECT classid, objid, object_identity FROM pg_event_trigger_ddl_commands() LOOP
            IF audit_log_ddl_guard_protects(touched.classid, touched.objid, touched.object_identity) THEN
                RAISE EXCEPTION 'the audit log''s structure changes only by a superuser (% refused)', TG_TAG
                    USING ERRCODE = 'insufficient_privilege';
            END IF;
        END LOOP;
    END IF;
END;
$$;
DO $$
BEGIN
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        CREATE EVENT TRIGGER audit_log_ddl_guard ON ddl_command_end EXECUTE FUNCTION audit_log_ddl_guard();
        CREATE EVENT TRIGGER audit_log_drop_guard ON sql_drop EXECUTE FUNCTION audit_log_ddl_guard();
    ELSE
        RAISE WARNING 'Not a superuser: the audit log''s DDL guard (an event trigger) was not installed.';
    END IF;
END;
$$;
"""

BACKWARD = """
DROP EVENT TRIGGER IF EXISTS audit_log_ddl_guard;
DROP EVENT TRIGGER IF EXISTS audit_log_drop_guard;
DROP FUNCTION IF EXISTS audit_log_ddl_guard();
DROP FUNCTION IF EXISTS audit_log_ddl_guard_protects(oid, oid, text);
DROP FUNCTION IF EXISTS audit_retention_purge(timestamptz);
DROP TRIGGER IF EXISTS audit_event_no_truncate ON audit_auditevent;
DROP TRIGGER IF EXISTS audit_event_chain ON audit_auditevent;
DROP FUNCTION IF EXISTS audit_event_chain();
DROP FUNCTION IF EXISTS audit_event_digest(text, bigint, text, timestamptz, text, text, text, jsonb);
DROP FUNCTION IF EXISTS audit_digest_part(text);
CREATE OR REPLACE FUNCTION audit_event_append_only() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE' AND current_setting('core.audit_purge', true) = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'audit events are append-only (% refused)', TG_OP USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;
ALTER TABLE audit_auditevent ENABLE TRIGGER audit_event_append_only;
"""


class Migration(migrations.Migration):

    dependencies = [
        ('audit', '0002_append_only_trigger'),
        ('organisations', '0001_initial'),
    ]

    operations = [
        migrations.CreateModel(
            name='AuditChainHead',
            fields=[
                ('organisation_id', models.CharField(max_length=40, primary_key=True, serialize=False)),
                ('sequence', models.BigIntegerField(default=0)),
                ('hash', models.CharField(max_length=64)),
                ('purged_through', models.BigIntegerField(default=0)),
            ],
            options={
                'verbose_name': 'audit chain head',
                'verbose_name_plural': 'audit chain heads',
            },
        ),
        migrations.AddField(
            model_name='auditevent',
            name='hash',
            field=models.CharField(blank=True, default='', editable=False, max_length=64, verbose_name='hash'),
        ),
        migrations.AddField(
            model_name='auditevent',
            name='previous_hash',
            field=models.CharField(blank=True, default='', editable=False, max_length=64, verbose_name='previous hash'),
        ),
        migrations.AddField(
            model_name='auditevent',
            name='sequence',
            field=models.BigIntegerField(editable=False, null=True, verbose_name='sequence'),
        ),
        migrations.AddConstraint(
            model_name='auditevent',
            constraint=models.UniqueConstraint(fields=('organisation', 'sequence'), name='audit_one_event_per_link'),
        ),
        migrations.RunSQL(FORWARD, BACKWARD),
    ]
