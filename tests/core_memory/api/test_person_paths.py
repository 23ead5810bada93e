"""A person's address names her unambiguously (issue 19): a subject sent percent-encoded is her
whole name, slash and all, through a real server (gunicorn hands on the path as sent)."""
from __future__ import annotations

import httpx
import pytest

from core_memory.persons.models import Person
from memory.models import MemoryRecord
from tests.factories import erasure_receipt, make_record
from tests.processes import child_environment, gunicorn_start, stop, wait_until_answering

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def site(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        environment = child_environment()
    process, base = gunicorn_start(environment=environment)
    try:
        wait_until_answering(process, base)
        yield base
    finally:
        stop(process)


def test_a_person_whose_subject_ends_in_export_is_erased_and_never_read_as_anothers_export(site, tenant):
    """Issue 19: `DELETE /v1/persons/x%2Fexport` answered 405 (the server decoded %2F and the
    export route took it) and `GET` on it exported person "x"."""
    make_record(tenant.index, "X woont in Delft.", subject="x")
    make_record(tenant.index, "X/export woont in Haarlem.", subject="x/export")
    headers = {"Authorization": f"Bearer {tenant.secret}"}

    read = httpx.get(f"{site}/v1/persons/x%2Fexport", headers=headers)
    exported = httpx.get(f"{site}/v1/persons/x%2Fexport/export", headers=headers)
    erased = httpx.delete(f"{site}/v1/persons/x%2Fexport", headers=headers)

    assert read.status_code == 405, read.text
    assert exported.status_code == 200, exported.text
    assert exported.json()["subject"] == "x/export"
    assert [record["text"] for record in exported.json()["records"]] == ["X/export woont in Haarlem."]
    assert erased.status_code == 200, erased.text
    # Her export's own `person.exported` event named her: erasure scrubs her person.* events too.
    assert erased.json() == {"subject": "x/export", "erased": erasure_receipt(records=1, audit_events_scrubbed=1)}
    assert list(MemoryRecord.objects.values_list("subject", flat=True)) == ["x"]


def test_a_raw_slash_and_other_escapes_still_name_her_through_the_server(site, tenant):
    """R-3.4: a slash the client did not encode reads as part of her name, as before, and other
    escapes are decoded once."""
    headers = {"Authorization": f"Bearer {tenant.secret}"}

    patched = httpx.patch(f"{site}/v1/persons/team/anna", json={"helper_model_may_read": False}, headers=headers)
    spaced = httpx.patch(f"{site}/v1/persons/anna%20%25%C3%A9", json={}, headers=headers)
    exported = httpx.get(f"{site}/v1/persons/team/anna/export", headers=headers)

    assert patched.json() == {"subject": "team/anna", "helper_model_may_read": False}
    assert spaced.json() == {"subject": "anna %é", "helper_model_may_read": True}
    assert exported.json()["person"] is not None and exported.json()["subject"] == "team/anna"
    assert sorted(Person.objects.values_list("subject", flat=True)) == ["anna %é", "team/anna"]
