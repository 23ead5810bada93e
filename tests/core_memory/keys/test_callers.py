"""The caller answers what it may do from its key, so services ask the caller and never the key."""
import pytest

from core_memory.base.errors import ImproperlyScoped
from core_memory.base.callers import Caller, CallerKind
from core_memory.keys.models import ApiKey
from memory.services.writes import RecordDraft, record_write


def key(**fields) -> ApiKey:
    return ApiKey(id="key_1", organisation_id="org_1", **fields)


def test_a_caller_holds_its_keys_capabilities():
    caller = Caller(key=key(capabilities=["knowledge", "memory", "management"]), subject="anna")

    assert caller.may("memory") and caller.may("management")
    assert not caller.may("threads")
    assert caller.capabilities == {"knowledge", "memory", "management"}
    assert caller.organisation_id == "org_1"


def test_a_subject_token_never_manages_the_organisation():
    caller = Caller(key=key(capabilities=["memory", "management"]), subject="anna", by_subject_token=True)

    assert caller.by_subject_token and caller.token_subject == "anna"
    assert caller.may("memory") and not caller.may("management")
    assert caller.capabilities == {"memory"}
    assert caller.acting_for("anna").may("management") is False


def test_a_caller_reads_the_policy_of_its_key():
    caller = Caller(key=key(policy={"read": ["idx_a"], "write": ["idx_b"]}))

    assert caller.may_read("idx_a") and not caller.may_write("idx_a")
    assert caller.may_write("idx_b") and not caller.may_read("idx_b")
    assert not caller.may_read("idx_c")
    assert Caller(key=key(policy={"read": ["*"], "write": []})).may_read("idx_c")


def test_the_console_is_the_organisation_itself():
    caller = Caller.console(organisation_id="org_1", actor="console:admin", subject="anna")

    assert caller.key is None and caller.organisation_id == "org_1" and caller.subject == "anna"
    assert caller.may_read("idx_a") and caller.may_write("idx_a")
    assert not caller.may("memory") and caller.capabilities == frozenset()


def test_every_caller_names_one_organisation_and_its_actor():
    """The set is closed: a key's caller reads both from its key; the console's and the system's
    name them, and neither holds a key or a subject token."""
    assert (Caller(key=key()).organisation_id, Caller(key=key()).actor, Caller(key=key()).kind) == ("org_1", "key_1", CallerKind.KEY)
    system = Caller.system(organisation_id="org_1", actor="command:import_memory")
    assert (system.organisation_id, system.actor, system.kind, system.key) == ("org_1", "command:import_memory", CallerKind.SYSTEM, None)
    for wrong in (
        lambda: Caller(),
        lambda: Caller(organisation_id="org_1", actor="console:admin", kind=CallerKind.CONSOLE, by_subject_token=True),
        lambda: Caller(key=key(), organisation_id="org_2"),
        lambda: Caller(key=key(), kind=CallerKind.CONSOLE),
        lambda: Caller(organisation_id="org_1", kind=CallerKind.SYSTEM),
    ):
        with pytest.raises(ValueError):
            wrong()


def test_the_console_writes_a_record_in_its_own_organisation_only(tenant, other_tenant):
    console = Caller.console(organisation_id=tenant.organisation.id, actor="console:admin", subject="anna")

    written = record_write(caller=console, index=tenant.index, draft=RecordDraft(type="fact", text="Anna fietst"))

    assert written.record.subject == "anna" and written.record.index_id == tenant.index.id
    with pytest.raises(ImproperlyScoped):
        record_write(caller=console, index=other_tenant.index, draft=RecordDraft(type="fact", text="Anna fietst"))


def test_only_a_caller_without_a_key_acts_for_the_whole_organisation():
    """The administrator's services (`*_by_administrator`) read every record of the organisation:
    a key's caller there, which its policy narrows, is a bug, never a wider read."""
    assert Caller.console(organisation_id="org_1", actor="console:admin").whole_organisation_id == "org_1"
    with pytest.raises(ImproperlyScoped):
        Caller(key=key()).whole_organisation_id
