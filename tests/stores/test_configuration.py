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


def test_a_sections_defaults_are_read_once_and_each_caller_gets_its_own_copy():
    """Issue 22: a turn reads the block's defaults each time; they are built once per process,
    and one caller changing its copy changes nobody else's."""
    from stores.configuration import section_defaults

    first = section_defaults("injection")
    first["commitments"]["inject_limit"] = 999
    first["rank"] = "changed"

    again = section_defaults("injection")
    assert again["commitments"]["inject_limit"] != 999
    assert again["rank"] != "changed"
