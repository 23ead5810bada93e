"""Lists (R-2.4): `limit` defaults to 50 and goes up to 500; a cursor pages on."""
import pytest

from audit.services import audit_event_record
from core_memory.base.callers import Caller

pytestmark = pytest.mark.django_db


@pytest.fixture
def events(tenant):
    """51 events of the tenant's own, beyond the ones its setup wrote."""
    for number in range(51):
        audit_event_record(caller=Caller.system(organisation_id=tenant.organisation.id, actor="test"), action="test.event", target=str(number))


def test_a_list_answers_fifty_by_default_and_a_cursor_to_the_rest(tenant, events):
    """R-2.4."""
    first = tenant.client().get("/v1/audit?action=test.event").json()
    rest = tenant.client().get(f"/v1/audit?action=test.event&cursor={first['next_cursor']}").json()

    assert len(first["data"]) == 50
    assert len(rest["data"]) == 1
    assert rest["next_cursor"] is None


def test_the_largest_limit_is_500(tenant, events):
    """R-2.4."""
    response = tenant.client().get("/v1/audit?action=test.event&limit=500")

    assert response.status_code == 200
    assert len(response.json()["data"]) == 51


@pytest.mark.parametrize("limit", ["0", "501", "-1", "ten", "1.5"])
def test_a_limit_outside_one_to_500_is_a_400_on_limit(tenant, limit):
    """R-2.4, R-2.3 (docs/decisions.md: refused rather than clamped)."""
    response = tenant.client().get(f"/v1/indexes?limit={limit}")

    assert response.status_code == 400
    assert response.json()["error"]["param"] == "limit"


@pytest.mark.parametrize("cursor", ["bm90LWEtY3Vyc29y", "not base64", "%00"])
def test_a_cursor_that_was_not_given_by_a_list_is_a_400_on_cursor(tenant, cursor):
    """R-2.4: not silently the first page again, where a client would loop for ever."""
    response = tenant.client().get(f"/v1/indexes?cursor={cursor}")

    assert response.status_code == 400
    assert response.json()["error"]["param"] == "cursor"


def test_an_empty_cursor_asks_for_the_first_page(tenant):
    """R-2.4."""
    response = tenant.client().get("/v1/indexes?cursor=")

    assert response.status_code == 200
    assert [row["id"] for row in response.json()["data"]] == [tenant.index.id]


def test_listing_audit_events_and_indexes_takes_a_fixed_number_of_queries(tenant, events, django_assert_num_queries):
    """STYLE: no per-row queries, however long the page."""
    from tests.factories import make_index

    for number in range(5):
        make_index(tenant.organisation, name=f"index {number}")
    client = tenant.client()

    with django_assert_num_queries(2):
        audit = client.get("/v1/audit?limit=500")
    with django_assert_num_queries(2):
        indexes = client.get("/v1/indexes")

    # The 51 events, the owner key's key.created and six index.created (the fixture's index and these five).
    assert len(audit.json()["data"]) == 58
    assert len(indexes.json()["data"]) == 6
