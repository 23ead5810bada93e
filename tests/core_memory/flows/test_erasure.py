"""`person_records_erase` (R-3.4): her records and every version of them are gone for good."""
import pytest

from memory.models import MemoryRecord
from memory.services import person_records_erase

pytestmark = pytest.mark.django_db


def test_erasing_a_person_removes_her_records_and_their_history_only(tenant, other_tenant, write):
    old = write("Woont in Delft", subject="anna")
    new = write("Woont in Leiden", subject="anna", replaces=old.id)
    write("woont in leiden", subject="anna")
    shared = write("Kantoor in Utrecht")
    brams = write("Woont in Delft", subject="bram")
    elsewhere = MemoryRecord.objects.create(
        organisation=other_tenant.organisation, index=other_tenant.index, subject="anna", type="fact", text="x",
        normalised_text="x", changed_at=new.changed_at,
    )

    removed = person_records_erase(organisation=tenant.organisation, subject="anna")

    assert removed == 2
    assert set(MemoryRecord.objects.values_list("id", flat=True)) == {shared.id, brams.id, elsewhere.id}
    assert not MemoryRecord.history.filter(id__in=[old.id, new.id]).exists()
    assert MemoryRecord.history.filter(id=shared.id).count() == 1
    assert MemoryRecord.history.filter(subject="anna", organisation_id=other_tenant.organisation.id).exists()


def test_a_shared_record_that_corrected_hers_loses_only_the_pointer(tenant, write):
    annas = write("Drinkt thee", subject="anna")
    # A shared record pointing at hers: written before corrections kept the person (set up directly).
    correction = write("Drinkt koffie")
    MemoryRecord.objects.filter(pk=correction.pk).update(replaces=annas)

    person_records_erase(organisation=tenant.organisation.id, subject="anna")

    correction.refresh_from_db()
    assert correction.replaces_id is None
    assert correction.status == "active"
