"""The API's JSON parser (core_memory.base.api.parsers): a body it cannot read is a 400, never a 500 (R-12.3)."""
from __future__ import annotations

import pytest

from core_memory.base.api.models import IdempotentRequest

pytestmark = pytest.mark.django_db


def test_a_body_nested_beyond_what_the_json_decoder_can_read_is_a_400(tenant):
    """R-12.3: not a RecursionError's 500, and not a claimed Idempotency-Key either."""
    body = '{"name": %s"x"%s}' % ("[" * 5000, "]" * 5000)

    response = tenant.client().generic(
        "POST", "/v1/indexes", body, content_type="application/json", HTTP_IDEMPOTENCY_KEY="deep"
    )

    assert (response.status_code, response.json()["error"]["param"]) == (400, None)
    assert not IdempotentRequest.objects.exists()


def test_a_body_900_levels_deep_is_read_however_deep_the_callers_stack():
    """R-12.3: how deep a body Python's decoder reads must not depend on how the process
    was started (`python -m pytest` in `make test` sits a few frames deeper than `pytest`)."""
    import io

    from core_memory.base.api.parsers import CoreJSONParser

    body = ("[" * 900 + "]" * 900).encode()

    def parse_at(depth: int):
        if depth:
            return parse_at(depth - 1)
        return CoreJSONParser().parse(io.BytesIO(body), parser_context={})

    data = parse_at(300)
    for _ in range(899):
        data = data[0]
    assert data == []
