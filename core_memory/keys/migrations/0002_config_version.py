"""A changed, revoked or deleted key, and a deleted subject token, raise the organisation's
configuration version (organisations 0002; docs/decisions.md "Caches")."""
from django.db import migrations

FORWARD = """
CREATE FUNCTION apikey_config_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM organisation_config_changed(OLD.organisation_id);
    IF TG_OP = 'UPDATE' AND NEW.organisation_id IS DISTINCT FROM OLD.organisation_id THEN
        PERFORM organisation_config_changed(NEW.organisation_id);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER apikey_config_changed AFTER UPDATE OR DELETE ON keys_apikey
    FOR EACH ROW EXECUTE FUNCTION apikey_config_changed();

CREATE FUNCTION subjecttoken_config_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- A token deleted with its key finds no key here; the key's own trigger counted it.
    PERFORM organisation_config_changed(organisation_id) FROM keys_apikey WHERE id = OLD.key_id;
    RETURN NULL;
END $$;
CREATE TRIGGER subjecttoken_config_changed AFTER UPDATE OR DELETE ON keys_subjecttoken
    FOR EACH ROW EXECUTE FUNCTION subjecttoken_config_changed();
"""

BACKWARD = """
DROP TRIGGER subjecttoken_config_changed ON keys_subjecttoken;
DROP FUNCTION subjecttoken_config_changed();
DROP TRIGGER apikey_config_changed ON keys_apikey;
DROP FUNCTION apikey_config_changed();
"""


class Migration(migrations.Migration):
    dependencies = [("keys", "0001_initial"), ("organisations", "0003_config_version")]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
