"""A key's memory configuration (core_memory.keys.configuration), whichever interface sends it (R-3.2, R-12.3)."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("metadata", "path"),
    [({"klant": "a\u0000"}, "klant"), ({"a\u0000": "x"}, None), ({"score": float("inf")}, "score")],
)
def test_the_key_configuration_refuses_an_unstorable_metadata_filter_whatever_the_interface(tenant, metadata, path):
    """R-12.3: the console validates a key's memory configuration through the same
    serializer as the API, but without the API's parser in front of it."""
    from rest_framework.exceptions import ValidationError

    from core_memory.base.validation import first_error
    from core_memory.keys.configuration import memory_config_normalise

    with pytest.raises(ValidationError) as refused:
        memory_config_normalise({"injection": {"index_id": tenant.index.id, "metadata": metadata}})

    assert first_error(refused.value.detail)[0] == ".".join(part for part in ("injection", "metadata", path) if part)
