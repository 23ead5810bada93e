"""The fuzz step's figures (cases sent per operation, answers by status class), counted in the
process that sends the cases and, under pytest-xdist, gathered from every worker at the end."""
from __future__ import annotations

import os
from collections import Counter

SENT: Counter = Counter()
STATUSES: Counter = Counter()
# The operations of the API document, known where the fuzz module is imported (a worker).
DOCUMENT_OPERATIONS = 0


def as_output() -> dict:
    return {"sent": dict(SENT), "statuses": dict(STATUSES), "operations": DOCUMENT_OPERATIONS}


def add_output(output: dict | None) -> None:
    global DOCUMENT_OPERATIONS
    if output:
        SENT.update(output["sent"])
        STATUSES.update(output["statuses"])
        DOCUMENT_OPERATIONS = max(DOCUMENT_OPERATIONS, output["operations"])


def operations_missed() -> int:
    """How many of the document's operations were sent no case, once any was."""
    return max(0, DOCUMENT_OPERATIONS - len(SENT)) if SENT else 0


def lines() -> list[str]:
    if not SENT:
        return []
    seed = os.environ.get("FUZZ_SEED", "?")
    statuses = ", ".join(f"{name} {count}" for name, count in sorted(STATUSES.items()))
    return [
        f"fuzz: seed {seed} (FUZZ_SEED={seed} sends these cases again)",
        f"fuzz: {sum(SENT.values())} cases over {len(SENT)} operations "
        f"(fewest {min(SENT.values())}, most {max(SENT.values())}) of the document's {DOCUMENT_OPERATIONS}; statuses: {statuses}",
    ]
