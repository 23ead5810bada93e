"""What PostgreSQL can store (core_memory.base.storable, R-12.3)."""
from __future__ import annotations


def test_the_check_of_a_deeply_nested_body_needs_no_recursion():
    """R-12.3: what the decoder could read, the check can walk, whatever the stack."""
    from core_memory.base.storable import unstorable_value

    deep: object = "\u0000"
    for _ in range(5000):
        deep = [deep]

    assert unstorable_value({"metadata": deep}) == ("metadata" + "[0]" * 5000, "Text may not contain NUL characters or lone surrogates.")
