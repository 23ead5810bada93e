"""The audit log's hash chains and `manage.py audit_verify` (R-11.1, issue 11: tamper-evident)."""
import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from audit.chain import GENESIS_HASH, audit_chains_verify, commitment, event_digest
from audit.models import AuditEvent
from audit.services import audit_event_record
from core_memory.base.callers import Caller
from tests.factories import OrganisationFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def organisation():
    return OrganisationFactory()


@pytest.fixture
def events(organisation):
    return [
        audit_event_record(caller=Caller.system(organisation_id=organisation.id, actor="key_a"), action="key.updated", target=f"key_{n}", details={"n": n, "tekst": "één"})
        for n in range(5)
    ]


def chain_of(organisation):
    return list(AuditEvent.objects.for_organisation(organisation).order_by("sequence").values_list("sequence", "previous_hash", "hash"))


def report_of(organisation):
    (report,) = audit_chains_verify(organisation_id=organisation.id)
    return report


def as_superuser_behind_the_trigger(statement: str, parameters=()) -> None:
    """What only a superuser can do: step past the append-only trigger."""
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE audit_auditevent DISABLE TRIGGER audit_event_append_only")
        cursor.execute(statement, parameters)
        cursor.execute("ALTER TABLE audit_auditevent ENABLE ALWAYS TRIGGER audit_event_append_only")


def test_each_event_is_the_next_link_of_its_organisations_chain(organisation, events):
    """Every link names the one before; the digest is recomputed outside the database."""
    chain = chain_of(organisation)

    assert [sequence for sequence, _previous, _hash in chain] == [1, 2, 3, 4, 5]
    assert chain[0][1] == GENESIS_HASH
    assert all(chain[n][1] == chain[n - 1][2] for n in range(1, 5))
    stored = AuditEvent.objects.get(pk=events[2].pk)
    with connection.cursor() as cursor:
        cursor.execute("SELECT details::text FROM audit_auditevent WHERE id = %s", [stored.pk])
        details_text = cursor.fetchone()[0]
    assert stored.target_commitment == commitment(salt=stored.target_salt, value="key_2")
    assert stored.details_commitment == commitment(salt=stored.details_salt, value=details_text)
    assert stored.hash == event_digest(
        organisation_id=organisation.id,
        sequence=3,
        previous_hash=chain[1][2],
        at=stored.at,
        actor="key_a",
        action="key.updated",
        target_commitment=stored.target_commitment,
        details_commitment=stored.details_commitment,
    )
    assert report_of(organisation).intact


def test_two_organisations_have_chains_of_their_own(organisation, events):
    other = OrganisationFactory()
    audit_event_record(caller=Caller.system(organisation_id=other.id, actor="key_b"), action="key.created")

    assert [sequence for sequence, _p, _h in chain_of(other)] == [1]
    assert report_of(other).intact and report_of(organisation).intact


def test_an_insert_cannot_choose_its_own_link(organisation, events):
    """The database fills sequence and hashes in, whatever the insert says."""
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO audit_auditevent (id, organisation_id, at, actor, action, target, details, sequence, previous_hash, hash)"
            " VALUES ('aud_forged', %s, now(), 'x', 'key.updated', '', '{}', 1, %s, %s)",
            [organisation.id, GENESIS_HASH, "f" * 64],
        )

    assert AuditEvent.objects.get(pk="aud_forged").sequence == 6
    assert report_of(organisation).intact


@pytest.mark.parametrize(
    ("tampering", "problem"),
    [
        ("UPDATE audit_auditevent SET details = '{\"n\": 99}'::jsonb WHERE id = %s", "changed since it was written"),
        ("UPDATE audit_auditevent SET actor = 'someone else' WHERE id = %s", "changed since it was written"),
        ("UPDATE audit_auditevent SET target = 'key_9' WHERE id = %s", "changed since it was written"),
        ("UPDATE audit_auditevent SET target_salt = NULL, target = '' WHERE id = %s", "never scrubbed"),
        ("DELETE FROM audit_auditevent WHERE id = %s", "sequence 4 where 3 was due"),
    ],
)
def test_a_changed_or_removed_event_breaks_the_chain(organisation, events, tampering, problem):
    """A superuser can still step past the trigger; the chain shows what she did."""
    as_superuser_behind_the_trigger(tampering, [events[2].pk])

    report = report_of(organisation)

    assert not report.intact
    assert any(problem in each for each in report.problems), report.problems


def test_removing_the_newest_events_shows_at_the_chain_head(organisation, events):
    as_superuser_behind_the_trigger("DELETE FROM audit_auditevent WHERE id IN (%s, %s)", [events[3].pk, events[4].pk])

    report = report_of(organisation)

    assert report.problems == ["the chain ends at 3 but its head is at 5 (newest events missing)"]


def test_audit_verify_prints_each_chain_and_fails_on_a_broken_one(organisation, events):
    """`manage.py audit_verify`: JSON with each chain's head (an anchor to keep elsewhere)."""
    out = StringIO()
    call_command("audit_verify", "--org", organisation.id, stdout=out)
    summary = json.loads(out.getvalue())
    assert summary["intact"] is True
    assert summary["chains"][0] | {"head_hash": None} == {
        "organisation_id": organisation.id,
        "intact": True,
        "events": 5,
        "first_sequence": 1,
        "last_sequence": 5,
        "head_sequence": 5,
        "head_hash": None,
        "purged_through": 0,
        "scrubbed": 0,
        "problems": [],
    }
    assert summary["chains"][0]["head_hash"] == chain_of(organisation)[-1][2]

    as_superuser_behind_the_trigger("UPDATE audit_auditevent SET target = 'x' WHERE id = %s", [events[0].pk])
    with pytest.raises(CommandError):
        call_command("audit_verify", stdout=StringIO())


# --- time: the database dates each event, and the verifier sees a time that goes back ----------


def test_the_database_dates_an_event_whatever_the_insert_says(organisation, events):
    """Issue: a back-dated insert (`at` in the past) kept its date and passed audit_verify. The
    trigger sets `at` from the database's clock, never before the event before it."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT clock_timestamp()")
        before = cursor.fetchone()[0]
        cursor.execute(
            "INSERT INTO audit_auditevent (id, organisation_id, at, actor, action, target, details)"
            " VALUES ('aud_backdated', %s, '2026-10-01 09:00+00', 'console:adminB', 'person.erased', 'forged-victim', '{}')",
            [organisation.id],
        )
        cursor.execute("SELECT clock_timestamp()")
        after = cursor.fetchone()[0]

    forged = AuditEvent.objects.get(pk="aud_backdated")
    assert before <= forged.at <= after
    assert forged.at >= AuditEvent.objects.get(pk=events[-1].pk).at
    assert report_of(organisation).intact


def test_a_rechained_event_dated_before_the_one_before_it_breaks_the_chain(organisation, events):
    """What a superuser could do past every trigger, digest and head included: the verifier
    checks that time never goes back along the chain."""
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE audit_auditevent DISABLE TRIGGER audit_event_append_only")
        cursor.execute(
            "UPDATE audit_auditevent SET at = at - interval '1 day',"
            " hash = audit_link_digest(organisation_id, sequence, previous_hash, at - interval '1 day', actor, action,"
            " target_commitment, details_commitment) WHERE id = %s RETURNING hash",
            [events[-1].pk],
        )
        new_hash = cursor.fetchone()[0]
        cursor.execute("UPDATE audit_auditchainhead SET hash = %s WHERE organisation_id = %s", [new_hash, organisation.id])
        cursor.execute("ALTER TABLE audit_auditevent ENABLE ALWAYS TRIGGER audit_event_append_only")

    report = report_of(organisation)

    assert report.problems == [f"{events[-1].pk}: dated before the event before it (back-dated)"]
