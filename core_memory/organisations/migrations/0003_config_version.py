"""Each organisation's configuration version (docs/decisions.md "Caches"): a number the
database raises whenever the organisation's row, or a key, subject token, index or store of
it, changes, whoever changes it. A process that keeps such rows between requests checks this
number, read fresh with the request's credential, before it uses them."""
from django.db import migrations

FORWARD = """
ALTER TABLE organisations_organisation ADD COLUMN config_version bigint NOT NULL DEFAULT 0;

-- Any UPDATE of the row raises it, also one that writes an older value (a stale save()).
CREATE FUNCTION organisation_config_version_raise() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.config_version := OLD.config_version + 1;
    RETURN NEW;
END $$;
CREATE TRIGGER organisation_config_version_raise BEFORE UPDATE ON organisations_organisation
    FOR EACH ROW EXECUTE FUNCTION organisation_config_version_raise();

-- For the organisation's other configuration tables: their triggers call this.
CREATE FUNCTION organisation_config_changed(organisation varchar) RETURNS void LANGUAGE sql AS $$
    UPDATE organisations_organisation SET config_version = config_version + 1 WHERE id = organisation
$$;
"""

BACKWARD = """
DROP FUNCTION organisation_config_changed(varchar);
DROP TRIGGER organisation_config_version_raise ON organisations_organisation;
DROP FUNCTION organisation_config_version_raise();
ALTER TABLE organisations_organisation DROP COLUMN config_version;
"""


class Migration(migrations.Migration):
    dependencies = [("organisations", "0002_rate_limit")]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
