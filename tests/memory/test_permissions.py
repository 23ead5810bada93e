"""Permission matrix of every record route (R-2.1, R-2.5, R-2.7, R-4.2, R-5.2).

Each denial asserts its status AND that nothing was written: records, their
versions and their retrieval counts are as before; only a write denial leaves
its `memory.write_denied` audit event.
"""
import pytest

from audit.models import AuditEvent
from core_memory.base.callers import Caller
from memory.models import MemoryRecord
from tests.factories import client_for, make_index
from memory.services.writes import RecordDraft

pytestmark = pytest.mark.django_db

ROUTES = {
    "write": ("post", "/v1/memory", lambda record: {"index_id": record.index_id, "type": "fact", "text": "nieuw feit"}),
    "list": ("get", "/v1/memory?index_id={index}", None),
    "read": ("get", "/v1/memory/{record}", None),
    "update": ("patch", "/v1/memory/{record}", lambda record: {"text": "gewijzigd"}),
    "delete": ("delete", "/v1/memory/{record}", None),
    "history": ("get", "/v1/memory/{record}/history", None),
    "search": ("post", "/v1/memory/search", lambda record: {"index_id": record.index_id, "query": "koffie"}),
}
CHANGES = {"write", "update", "delete"}
SUCCESS = {"write": 201, "list": 200, "read": 200, "update": 200, "delete": 204, "history": 200, "search": 200}


@pytest.fixture
def record(tenant, write):
    return write("Anna drinkt graag koffie", subject=None)


def _call(client, route, record):
    method, path, body = ROUTES[route]
    url = path.format(index=record.index_id, record=record.id)
    return getattr(client, method)(url, body(record) if body else None, format="json")


def _state():
    return (
        sorted(MemoryRecord.objects.values_list("id", "text", "status", "confirmations", "retrieval_count")),
        MemoryRecord.history.count(),
        sorted(AuditEvent.objects.exclude(action="memory.write_denied").values_list("id", flat=True)),
    )


def _assert_denied(response, status, before):
    assert response.status_code == status, response.content
    assert _state() == before


@pytest.mark.parametrize("route", ROUTES)
def test_owner_key_may_use_every_route(tenant, record, route):
    response = _call(tenant.client(), route, record)
    assert response.status_code == SUCCESS[route], response.content


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("capabilities", [("knowledge",), ("memory",), ("knowledge", "threads")])
def test_a_key_without_memory_and_knowledge_is_a_403(tenant, record, route, capabilities):
    """R-2.7: `/v1/memory…` needs `memory`, which needs `knowledge`.

    Key writes refuse `memory` without `knowledge`; a stored key that has it anyway
    (set directly) is still refused here.
    """
    from core_memory.keys.models import ApiKey

    client, key = tenant.key_client(capabilities=("knowledge", "threads"))
    ApiKey.objects.filter(pk=key.pk).update(capabilities=list(capabilities))
    before = _state()

    _assert_denied(_call(client, route, record), 403, before)
    assert not AuditEvent.objects.filter(action="memory.write_denied").exists()


@pytest.mark.parametrize("route", ROUTES)
def test_a_key_whose_policy_does_not_name_the_index_gets_a_404(tenant, record, route):
    """R-4.2, R-5.2: unavailable index (named for neither right) → 404."""
    other_index = make_index(tenant.organisation, name="ander")
    client, _key = tenant.key_client(read=(other_index.id,), write=(other_index.id,))
    before = _state()

    _assert_denied(_call(client, route, record), 404, before)
    assert not AuditEvent.objects.filter(action="memory.write_denied").exists()


@pytest.mark.parametrize("route", ROUTES)
def test_another_organisations_key_gets_a_404(other_tenant, record, route):
    """R-2.5."""
    before = _state()
    _assert_denied(_call(other_tenant.client(), route, record), 404, before)


@pytest.mark.parametrize("route", ROUTES)
def test_no_credential_is_a_401(anonymous, record, route):
    """R-2.1."""
    before = _state()
    _assert_denied(_call(anonymous, route, record), 401, before)


@pytest.mark.parametrize("route", ROUTES)
def test_a_revoked_key_is_a_401(tenant, record, route):
    """R-2.1."""
    from core_memory.keys.services import key_revoke

    client, key = tenant.key_client()
    key_revoke(caller=Caller.system(organisation_id=key.organisation_id, actor="test"), key_id=key.id)
    before = _state()
    _assert_denied(_call(client, route, record), 401, before)


@pytest.mark.parametrize("route", ROUTES)
def test_a_read_only_key_reads_and_searches_but_changes_are_403_and_audited(tenant, record, route):
    """R-5.2: read and write rights are separate; a denied change is audited."""
    client, key = tenant.key_client(read=(tenant.index.id,), write=())
    before = _state()

    response = _call(client, route, record)

    if route in CHANGES:
        _assert_denied(response, 403, before)
        event = AuditEvent.objects.get(action="memory.write_denied")
        assert (event.actor, event.target, event.organisation_id) == (key.id, tenant.index.id, tenant.organisation.id)
    else:
        assert response.status_code == SUCCESS[route]
        assert not AuditEvent.objects.filter(action="memory.write_denied").exists()


@pytest.mark.parametrize("route", sorted(set(ROUTES) - CHANGES))
def test_a_write_only_key_may_not_read(tenant, record, route):
    """R-5.2, R-2.7: routes that read records need the read right."""
    client, _key = tenant.key_client(read=(), write=(tenant.index.id,))
    before = _state()
    _assert_denied(_call(client, route, record), 403, before)


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_a_deleted_index_makes_its_records_404(tenant, record, route):
    """R-4.1, R-4.2: a record is exactly as absent as its index."""
    from stores.services import index_delete

    index_delete(caller=Caller.system(organisation_id=tenant.index.organisation_id, actor="test"), index=tenant.index)
    before = _state()
    _assert_denied(_call(tenant.client(), route, record), 404, before)


@pytest.mark.parametrize("route", ["read", "update", "delete", "history"])
def test_another_persons_record_is_a_404_for_a_person_scoped_request(tenant, write, route):
    """R-5.6, R-5.8: a request naming a person never sees another's records."""
    annas = write("Anna's geheim", subject="anna")
    before = _state()
    _assert_denied(_call(tenant.client(subject="bram"), route, annas), 404, before)


@pytest.mark.parametrize("route", ["update", "delete"])
def test_a_person_cannot_change_a_shared_record(tenant, record, route):
    """R-5.8: a person-scoped request changes only her own records; a shared one is a 404."""
    before = _state()
    _assert_denied(_call(tenant.client(subject="anna"), route, record), 404, before)


def test_a_subject_token_with_another_x_core_subject_is_a_403(tenant, record):
    """R-2.2."""
    from core_memory.keys.services import subject_token_create

    _token, secret = subject_token_create(caller=Caller(key=tenant.key, subject="anna"), ttl_seconds=60)
    client = client_for(secret, subject="bram")
    before = _state()
    _assert_denied(_call(client, "write", record), 403, before)


def test_a_write_only_key_changes_a_record_but_is_not_shown_it(tenant, record):
    """R-5.2, R-5.7: a PATCH needs the write right; what its answer shows needs the read right.
    `PATCH {}` by a key that may write but not read the index gave the whole record back."""
    client, _key = tenant.key_client(read=(), write=(tenant.index.id,))

    unchanged = client.patch(f"/v1/memory/{record.id}", {}, format="json")
    changed = client.patch(f"/v1/memory/{record.id}", {"text": "Anna drinkt thee"}, format="json")

    assert (unchanged.status_code, unchanged.content) == (204, b"")
    assert (changed.status_code, changed.content) == (204, b"")
    assert MemoryRecord.objects.get(pk=record.pk).text == "Anna drinkt thee"


@pytest.mark.parametrize("route", ["read", "update", "delete", "history"])
def test_a_record_the_key_cannot_use_reads_exactly_like_a_missing_one(tenant, other_tenant, route):
    """R-2.5, R-4.2: no existence oracle — a record in an index the key cannot use, in a
    deleted index or of another organisation answers what a missing record answers."""
    from memory.services.writes import record_write
    from stores.services import index_delete
    from tests.factories import resolved_for

    unnamed_index = make_index(tenant.organisation, name="ander")
    deleted_index = make_index(tenant.organisation, name="weg")
    in_unnamed = record_write(caller=Caller(key=tenant.key, subject=None, actor="t"), index=resolved_for(tenant.key, unnamed_index), draft=RecordDraft(type="fact", text="a")).record
    in_deleted = record_write(caller=Caller(key=tenant.key, subject=None, actor="t"), index=resolved_for(tenant.key, deleted_index), draft=RecordDraft(type="fact", text="b")).record
    foreign = record_write(caller=Caller(key=other_tenant.key, subject=None, actor="t"), index=other_tenant.index, draft=RecordDraft(type="fact", text="c")).record
    client, _key = tenant.key_client(read=(tenant.index.id, deleted_index.id), write=(tenant.index.id, deleted_index.id))
    index_delete(caller=Caller.system(organisation_id=deleted_index.organisation_id, actor="test"), index=deleted_index)
    missing = MemoryRecord(id="mem_01aaaaaaaaaaaaaaaaaaaaaaaa", index_id=tenant.index.id)

    answers = {(response.status_code, response.content) for response in (_call(client, route, each) for each in (in_unnamed, in_deleted, foreign, missing))}

    assert answers == {(404, b'{"error":{"type":"not_found_error","message":"No such record.","param":null}}')}
