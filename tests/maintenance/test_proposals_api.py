"""`GET /v1/memory/proposals`, `POST …/{id}/apply`, `POST …/{id}/reject` (R-9.5, R-9.7, R-2.7) and the
console's services for the same: `management` and `memory`, audited, another organisation's a 404."""
from __future__ import annotations

import pytest

from audit.models import AuditEvent
from core_memory.base.errors import Conflict, NotFound
from core_memory.base.callers import Caller
from maintenance.models import Proposal, ProposalSource
from maintenance.selectors import proposal_list_for_organisation
from maintenance.services.proposals import proposal_apply_by_administrator, proposal_reject_by_administrator
from memory.models import MemoryRecord
from tests.factories import client_for
from tests.maintenance.builders import promotion_on

pytestmark = pytest.mark.django_db

EXPENSES = "Declaraties gaan voor de 25e naar financiën."
PROPOSAL_CAPABILITIES = ("management", "knowledge", "memory")


@pytest.fixture
def proposal(tenant, write, fake_model, run_store):
    """A several-persons proposal resting on Anna's and Bram's records, of a store labelling what it shares."""
    promotion_on(tenant.index, doelgroep="iedereen")
    write(EXPENSES, subject="anna")
    write(EXPENSES, subject="bram")
    run_store()
    return Proposal.objects.get()


def written_state() -> tuple:
    return (
        tuple(Proposal.objects.order_by("id").values_list("id", "status", "decided_by")),
        tuple(MemoryRecord.objects.order_by("id").values_list("id", "subject", "status")),
        tuple(AuditEvent.objects.exclude(action="memory.write_denied").order_by("id").values_list("action", "target")),
    )


def test_the_list_shows_each_proposal_with_the_records_it_rests_on(tenant, proposal):
    response = tenant.client().get("/v1/memory/proposals")

    assert response.status_code == 200
    annas, brams = ProposalSource.objects.order_by("record__subject").values_list("record_id", flat=True)
    assert response.json() == {
        "data": [
            {
                "id": proposal.id, "index_id": tenant.index.id, "type": "fact", "text": EXPENSES, "confidence": 1.0,
                "reason": "several_persons", "status": "pending",
                "sources": sorted([{"memory_id": annas, "subject": "anna"}, {"memory_id": brams, "subject": "bram"}], key=lambda each: each["memory_id"]),
                "memory_id": None, "decided_by": None, "decided_at": None, "created_at": proposal.created_at.isoformat().replace("+00:00", "Z"),
            }
        ],
        "next_cursor": None,
    }


def test_the_list_filters_by_index_and_status(tenant, proposal):
    client = tenant.client()

    assert [each["id"] for each in client.get(f"/v1/memory/proposals?index_id={tenant.index.id}&status=pending").json()["data"]] == [proposal.id]
    assert client.get("/v1/memory/proposals?status=applied").json()["data"] == []
    assert client.get("/v1/memory/proposals?status=maybe").json()["error"]["param"] == "status"
    assert client.get("/v1/memory/proposals?index_id=idx_unknown").status_code == 404


def test_applying_writes_a_shared_record_of_nobody_with_the_labels_and_leaves_hers_hers(tenant, proposal):
    """R-9.5, R-9.7."""
    response = tenant.client().post(f"/v1/memory/proposals/{proposal.id}/apply")

    assert response.status_code == 200
    body = response.json()
    shared = MemoryRecord.objects.get(subject__isnull=True)
    assert (body["status"], body["memory_id"], body["decided_by"]) == ("applied", shared.id, tenant.key.id)
    assert (shared.text, shared.type, shared.metadata, shared.source, shared.provenance) == (
        EXPENSES, "fact", {"doelgroep": "iedereen"}, "promotion", {"thread_id": None, "item_ids": [], "response_id": None}
    )
    assert sorted(MemoryRecord.objects.filter(subject__isnull=False, status="active").values_list("subject", flat=True)) == ["anna", "bram"]
    event = AuditEvent.objects.get(action="proposal.applied")
    assert (event.actor, event.target, event.details) == (
        tenant.key.id, proposal.id, {"index_id": tenant.index.id, "memory_id": shared.id, "write": "created"}
    )


def test_rejecting_writes_no_record_and_is_audited(tenant, proposal):
    """R-9.5, R-9.7."""
    response = tenant.client().post(f"/v1/memory/proposals/{proposal.id}/reject")

    assert (response.status_code, response.json()["status"]) == (200, "rejected")
    assert not MemoryRecord.objects.filter(subject__isnull=True).exists()
    event = AuditEvent.objects.get(action="proposal.rejected")
    assert (event.actor, event.target, event.details) == (tenant.key.id, proposal.id, {"index_id": tenant.index.id})


@pytest.mark.parametrize("first, second", [("apply", "apply"), ("apply", "reject"), ("reject", "apply")])
def test_a_decided_proposal_cannot_be_decided_again(tenant, proposal, first, second):
    tenant.client().post(f"/v1/memory/proposals/{proposal.id}/{first}")
    before = written_state()

    response = tenant.client().post(f"/v1/memory/proposals/{proposal.id}/{second}")

    assert (response.status_code, response.json()["error"]["type"]) == (409, "conflict_error")
    assert written_state() == before


def test_a_retry_with_the_same_idempotency_key_answers_the_first_answer_and_writes_nothing(tenant, proposal):
    """R-2.6."""
    client = tenant.client()
    first = client.post(f"/v1/memory/proposals/{proposal.id}/apply", HTTP_IDEMPOTENCY_KEY="apply-1")
    before = written_state()

    again = client.post(f"/v1/memory/proposals/{proposal.id}/apply", HTTP_IDEMPOTENCY_KEY="apply-1")

    assert (again.status_code, again.json(), again.headers["Idempotent-Replayed"]) == (200, first.json(), "true")
    assert written_state() == before


ROUTES = [("get", "/v1/memory/proposals", 200), ("post", "/v1/memory/proposals/{id}/apply", 200), ("post", "/v1/memory/proposals/{id}/reject", 200)]


@pytest.mark.parametrize("method, path, success", ROUTES)
def test_a_key_with_management_and_memory_passes(tenant, proposal, method, path, success):
    """R-2.7."""
    client, _ = tenant.key_client(capabilities=PROPOSAL_CAPABILITIES)

    assert getattr(client, method)(path.format(id=proposal.id)).status_code == success


@pytest.mark.parametrize("method, path, _", ROUTES)
@pytest.mark.parametrize("missing", ["management", "memory"])
def test_a_key_without_management_or_memory_is_a_403_and_writes_nothing(tenant, proposal, method, path, _, missing):
    """R-2.7."""
    client, _key = tenant.key_client(capabilities=[each for each in PROPOSAL_CAPABILITIES if each != missing])
    before = written_state()

    response = getattr(client, method)(path.format(id=proposal.id))

    assert (response.status_code, response.json()["error"]["type"]) == (403, "permission_error")
    assert written_state() == before


@pytest.mark.parametrize("method, path, _", ROUTES)
def test_another_organisations_key_is_a_404_and_writes_nothing(tenant, other_tenant, proposal, method, path, _):
    """R-2.5: its list is empty, the proposal's routes are a 404."""
    before = written_state()

    response = getattr(other_tenant.client(), method)(path.format(id=proposal.id))

    assert response.status_code == (200 if method == "get" else 404)
    assert response.json().get("data", []) == []
    assert written_state() == before


@pytest.mark.parametrize("method, path, _", ROUTES)
def test_a_key_whose_policy_does_not_name_the_index_sees_nothing(tenant, proposal, method, path, _):
    """R-4.2: a proposal is as absent as its index."""
    client, _key = tenant.key_client(capabilities=PROPOSAL_CAPABILITIES, read=(), write=())
    before = written_state()

    response = getattr(client, method)(path.format(id=proposal.id))

    assert response.status_code == (200 if method == "get" else 404)
    assert response.json().get("data", []) == []
    assert written_state() == before


@pytest.mark.parametrize("decision", ["apply", "reject"])
def test_a_key_that_may_read_but_not_write_the_index_may_list_but_not_decide(tenant, proposal, decision):
    """R-5.2: deciding changes what the store shares; the denial is audited as memory.write_denied."""
    client, key = tenant.key_client(capabilities=PROPOSAL_CAPABILITIES, write=())
    before = written_state()

    assert [each["id"] for each in client.get("/v1/memory/proposals").json()["data"]] == [proposal.id]
    response = client.post(f"/v1/memory/proposals/{proposal.id}/{decision}")

    assert response.status_code == 403
    assert written_state() == before
    assert AuditEvent.objects.filter(action="memory.write_denied", details__key_id=key.id).count() == 1


@pytest.mark.parametrize("method, path, _", ROUTES)
def test_no_credential_is_a_401(anonymous, proposal, method, path, _):
    """R-2.1."""
    before = written_state()

    response = getattr(anonymous, method)(path.format(id=proposal.id))

    assert response.status_code == 401
    assert written_state() == before


@pytest.mark.parametrize("method, path, _", ROUTES)
def test_a_request_for_one_person_cannot_reach_proposals(tenant, proposal, method, path, _):
    """R-12.1: proposals rest on several persons' records; a subject token (no management) and a
    key naming a person with X-Core-Subject are both refused, and nothing is written."""
    token = tenant.client().post("/v1/subject-tokens", {"subject": "anna"}, format="json").json()["token"]
    before = written_state()

    by_token = getattr(client_for(token), method)(path.format(id=proposal.id))
    by_header = getattr(tenant.client(subject="anna"), method)(path.format(id=proposal.id))

    assert (by_token.status_code, by_header.status_code, by_header.json()["error"]["param"]) == (403, 403, "X-Core-Subject")
    assert written_state() == before


def test_a_console_administrator_decides_her_organisations_proposals_only(tenant, other_tenant, proposal):
    """R-9.5, R-10.3: the console's services, with her organisation."""
    with pytest.raises(NotFound):
        proposal_apply_by_administrator(caller=Caller.console(organisation_id=other_tenant.organisation.id, actor="console:piet"), proposal_id=proposal.id)
    assert list(proposal_list_for_organisation(caller=Caller.system(organisation_id=other_tenant.organisation.id, actor="test"))) == []

    applied = proposal_apply_by_administrator(caller=Caller.console(organisation_id=tenant.organisation.id, actor="console:anna"), proposal_id=proposal.id)

    assert (applied.status, applied.decided_by, applied.applied_record.subject) == ("applied", "console:anna", None)
    assert AuditEvent.objects.get(action="proposal.applied").actor == "console:anna"
    with pytest.raises(Conflict):
        proposal_reject_by_administrator(caller=Caller.console(organisation_id=tenant.organisation.id, actor="console:anna"), proposal_id=proposal.id)
