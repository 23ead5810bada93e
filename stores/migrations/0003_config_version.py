"""A changed or deleted index, and a new, changed or deleted store, raise the organisation's
configuration version (organisations 0002; docs/decisions.md "Caches")."""
from django.db import migrations

FORWARD = """
CREATE FUNCTION knowledgeindex_config_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM organisation_config_changed(OLD.organisation_id);
    RETURN NULL;
END $$;
CREATE TRIGGER knowledgeindex_config_changed AFTER UPDATE OR DELETE ON stores_knowledgeindex
    FOR EACH ROW EXECUTE FUNCTION knowledgeindex_config_changed();

CREATE FUNCTION memorystore_config_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    changed_index varchar := CASE WHEN TG_OP = 'DELETE' THEN OLD.index_id ELSE NEW.index_id END;
BEGIN
    PERFORM organisation_config_changed(organisation_id) FROM stores_knowledgeindex WHERE id = changed_index;
    RETURN NULL;
END $$;
CREATE TRIGGER memorystore_config_changed AFTER INSERT OR UPDATE OR DELETE ON stores_memorystore
    FOR EACH ROW EXECUTE FUNCTION memorystore_config_changed();
"""

BACKWARD = """
DROP TRIGGER memorystore_config_changed ON stores_memorystore;
DROP FUNCTION memorystore_config_changed();
DROP TRIGGER knowledgeindex_config_changed ON stores_knowledgeindex;
DROP FUNCTION knowledgeindex_config_changed();
"""


class Migration(migrations.Migration):
    dependencies = [("stores", "0002_store_knows_the_switch_types"), ("organisations", "0003_config_version")]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
