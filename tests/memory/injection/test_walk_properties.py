"""Properties of the injection walk that hold for every store, key and turn (R-7.5–R-7.8; issue 11).

Hypothesis makes up a store — records of every type, hers, another person's and shared ones,
of any confidence and length — a block (`limit`, `token_budget`, `types`) and the store's
`organisation_share` and commitments cap, and checks on the block the walk builds:

- the count: her records and the shared ones together never exceed `limit` (R-7.8);
- the budget: the whole block never exceeds the stricter of the key's and the store's budget;
- the organisation's share: in a turn for a person, shared lines never use more of the budget
  than `organisation_share` allows;
- the sections: each at most once, in R-7.5's order, never empty, and each holds only what it
  may (her behaviour only, another person's records never, commitments not past their cap);
- within `[about_this_person]` and `[organisation]`, effective confidence never rises (R-7.7).
"""
from __future__ import annotations

import json

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory.injection.lines import record_line, tokens_of_bytes
from memory.injection.walk import BEHAVIOUR_LIMIT, SECTIONS
from tests.memory.injection.builders import build, injecting_key, record, store_injection

pytestmark = pytest.mark.django_db

TYPES = ("fact", "preference", "commitment", "behaviour", "lesson")
OWNERS = ("anna", "bob", None)

records_strategy = st.lists(
    st.tuples(
        st.sampled_from(TYPES),
        st.sampled_from(OWNERS),
        st.floats(min_value=0.0, max_value=1.0, allow_nan=False),
        st.text(alphabet="abcdefghij klmnoé€", min_size=1, max_size=300),
    ),
    max_size=40,
)
block_strategy = st.fixed_dictionaries(
    {
        "limit": st.integers(min_value=0, max_value=30),
        "token_budget": st.integers(min_value=0, max_value=600),
        "types": st.sampled_from([[], ["fact"], ["fact", "commitment", "behaviour"], ["lesson", "preference"]]),
    }
)
store_strategy = st.fixed_dictionaries(
    {
        "organisation_share": st.sampled_from([0.0, 0.1, 0.25, 0.4]),
        "token_budget": st.one_of(st.none(), st.integers(min_value=0, max_value=600)),
        "commitments": st.fixed_dictionaries({"inject_limit": st.integers(min_value=0, max_value=6)}),
    }
)


class _Undo(Exception):
    pass


def _rolled_back():
    """One example's records live in a savepoint that is rolled back (marked as the test case's
    own, so the services' durable transactions run inside it as inside the test's)."""
    block = transaction.atomic()
    block._from_testcase = True
    return block


def _parsed(text: str) -> list[tuple[str, list[dict]]]:
    sections: list[tuple[str, list[dict]]] = []
    for line in text.split("\n") if text else []:
        if line.startswith("[") and line.endswith("]"):
            sections.append((line[1:-1], []))
        else:
            sections[-1][1].append(json.loads(line))
    return sections


@settings(max_examples=60, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(records=records_strategy, block=block_strategy, store=store_strategy, for_anna=st.booleans())
def test_the_walk_keeps_count_budget_share_and_order_for_any_store(tenant, records, block, store, for_anna):
    subject = "anna" if for_anna else None
    try:
        with _rolled_back():
            made = {}
            for number, (type_name, owner, confidence, text) in enumerate(records):
                made_record = record(tenant.index, f"{number} {text}", type=type_name, subject=owner, confidence=round(confidence, 4))
                made[made_record.id] = made_record
            store_injection(tenant.index, **store)
            key = injecting_key(tenant, **block)
            result = build(key, subject=subject)
            raise _Undo(result)
    except _Undo as undone:
        result = undone.args[0]

    budget = block["token_budget"] if store["token_budget"] is None else min(block["token_budget"], store["token_budget"])
    sections = _parsed(result.text)
    names = [name for name, _lines in sections]
    injected = {each.id: each for each in result.records}

    # the budget, and the trace's own estimate of it
    assert tokens_of_bytes(len(result.text.encode("utf-8"))) <= budget
    assert result.trace["estimated_tokens"] <= budget
    # the count: her records and the shared ones (not commitments, behaviour or episodes)
    counted = sum(len(lines) for name, lines in sections if name in ("about_this_person", "organisation"))
    assert counted <= block["limit"]
    # the organisation's share, in a turn for a person
    if subject is not None:
        shared_bytes = sum(len(record_line(each).encode("utf-8")) for each in result.records if each.subject is None)
        assert tokens_of_bytes(shared_bytes) <= budget * store["organisation_share"]
    # the sections: R-7.5's order, each once, none empty
    assert names == [name for name in SECTIONS if name in names]
    assert all(lines for _name, lines in sections)
    # each section holds only what it may
    assert all(each.subject in (subject, None) for each in result.records), "another person's record"
    for name, lines in sections:
        if name == "commitments":
            assert len(lines) <= store["commitments"]["inject_limit"]
    behaviour = [each for each in result.records if each.type == "behaviour"]
    assert len(behaviour) <= BEHAVIOUR_LIMIT
    assert all(each.subject == subject and subject is not None for each in behaviour), "a shared or foreign behaviour rule"
    if block["types"]:
        assert {each.type for each in result.records} <= set(block["types"])
    # within a ranked section, effective confidence never rises (rank: confidence, no decay here)
    for name, lines in sections:
        if name in ("about_this_person", "organisation"):
            confidences = [made[each_id].confidence for each_id, section in result.detail["injected"] if section == name]
            assert confidences == sorted(confidences, reverse=True)
    assert len(injected) == result.trace["injected"]
