import pytest
from django.db import IntegrityError, transaction

from memory.models import MemoryRecord
from tests.factories import make_record

pytestmark = pytest.mark.django_db


def _record(tenant, *, text: str = "Acme wil facturen per e-mail", **fields):
    return make_record(tenant.index, text, **fields)


def test_shared_records_with_the_same_text_collide_although_their_subject_is_null(tenant):
    """R-5.4: the one-active-record rule holds for shared records (NULLS NOT DISTINCT)."""
    _record(tenant)
    with pytest.raises(IntegrityError), transaction.atomic():
        _record(tenant)
    _record(tenant, status="ended")
    assert MemoryRecord.objects.filter(index=tenant.index).count() == 2


def test_stored_search_vector_holds_dutch_and_english_stems(tenant):
    record = _record(tenant, text="Acme wants invoices by e-mail; facturen per post")
    vector = MemoryRecord.objects.values_list("search_vector", flat=True).get(pk=record.pk)
    assert "'invoic'" in vector
    assert "'factur'" in vector
