"""R-11.1: nothing in the application can update or delete an audit event; the database refuses."""
import pytest
from django.db import DatabaseError, connection, transaction

from audit.models import AuditEvent
from audit.services import audit_event_record

pytestmark = pytest.mark.django_db


@pytest.fixture
def event(tenant):
    return audit_event_record(organisation=tenant.organisation, actor="test", action="key.updated", target="key_x")


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
    audit_event_record(organisation=tenant.organisation, actor="test", action="key.revoked", target="key_x")

    actions = AuditEvent.objects.filter(organisation_id=tenant.organisation.id, target="key_x").order_by("id").values_list("action", flat=True)
    assert list(actions) == ["key.updated", "key.revoked"]
