"""A store's sections (stores.configuration), whichever interface sends them (R-4.3, R-12.3)."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def test_the_store_sections_refuse_an_unstorable_label_name_whatever_the_interface():
    """R-12.3: the console's store form validates through store_sections_normalise."""
    from rest_framework.exceptions import ValidationError

    from core_memory.base.validation import first_error
    from stores.configuration import store_sections_normalise

    with pytest.raises(ValidationError) as refused:
        store_sections_normalise({"promotion": {"labels": {"a\u0000": "b"}}})

    assert first_error(refused.value.detail)[0] == "promotion.labels"
