"""The fuzz step's figures (cases sent per operation, answers by status class), counted in the
process that sends the cases and, under pytest-xdist, gathered from every worker at the end."""
from __future__ import annotations

import os
from collections import Counter

SENT: Counter = Counter()
STATUSES: Counter = Counter()


def as_output() -> dict:
    return {"sent": dict(SENT), "statuses": dict(STATUSES)}


def add_output(output: dict | None) -> None:
    if output:
        SENT.update(output["sent"])
        STATUSES.update(output["statuses"])


def lines() -> list[str]:
    if not SENT:
        return []
    seed = os.environ.get("FUZZ_SEED", "?")
    statuses = ", ".join(f"{name} {count}" for name, count in sorted(STATUSES.items()))
    return [
        f"fuzz: seed {seed} (FUZZ_SEED={seed} sends these cases again)",
        f"fuzz: {sum(SENT.values())} cases over {len(SENT)} operations "
        f"(fewest {min(SENT.values())}, most {max(SENT.values())}); statuses: {statuses}",
    ]
