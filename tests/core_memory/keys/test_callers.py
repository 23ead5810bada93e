"""The caller answers what it may do from its key, so services ask the caller and never the key."""
from core_memory.keys.authentication import Principal
from core_memory.keys.callers import Caller
from core_memory.keys.models import ApiKey


def key(**fields) -> ApiKey:
    return ApiKey(id="key_1", organisation_id="org_1", **fields)


def test_a_caller_holds_its_keys_capabilities():
    caller = Caller(key=key(capabilities=["knowledge", "memory", "management"]), subject="anna")

    assert caller.may("memory") and caller.may("management")
    assert not caller.may("threads")
    assert caller.capabilities == {"knowledge", "memory", "management"}
    assert caller.organisation_id == "org_1"


def test_a_subject_token_never_manages_the_organisation():
    principal = Principal(key=key(capabilities=["memory", "management"]), token_subject="anna")
    caller = principal.acting_for("anna")

    assert caller.by_subject_token
    assert caller.may("memory") and not caller.may("management")
    assert caller.capabilities == {"memory"}
    assert principal.has_capability("management") is False


def test_a_caller_reads_the_policy_of_its_key():
    caller = Caller(key=key(policy={"read": ["idx_a"], "write": ["idx_b"]}))

    assert caller.may_read("idx_a") and not caller.may_write("idx_a")
    assert caller.may_write("idx_b") and not caller.may_read("idx_b")
    assert not caller.may_read("idx_c")
    assert Caller(key=key(policy={"read": ["*"], "write": []})).may_read("idx_c")


def test_the_console_is_the_organisation_itself():
    caller = Caller.console(organisation_id="org_1", subject="anna")

    assert caller.key is None and caller.organisation_id == "org_1" and caller.subject == "anna"
    assert caller.may_read("idx_a") and caller.may_write("idx_a")
    assert not caller.may("memory") and caller.capabilities == frozenset()
