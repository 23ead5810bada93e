"""House rules that a reader of production code relies on (docs/decisions.md "Traceability"):
production code explains itself in plain words, without requirement ids, spec sections or issue
numbers; which test pins which requirement is the tests' business and docs/traceability.md's."""
from __future__ import annotations

import re
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
# Production code: every package and folder that ships, not the tests, the benches or the docs.
PRODUCTION = ("core_memory", "memory", "extraction", "stores", "audit", "maintenance", "templates", "scripts")
PRODUCTION_SUFFIXES = {".py", ".html", ".txt"}
REFERENCE = re.compile(r"\bR-\d+\.\d+|SPEC §|\b[Ii]ssue \d+")


def production_files() -> list[Path]:
    return sorted(
        path
        for folder in PRODUCTION
        for path in (PROJECT / folder).rglob("*")
        if path.suffix in PRODUCTION_SUFFIXES and path.is_file()
    )


def test_production_code_names_no_requirement_id_spec_section_or_issue_number():
    found = [
        f"{path.relative_to(PROJECT)}:{number}: {line.strip()}"
        for path in production_files()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if REFERENCE.search(line)
    ]

    assert not found, (
        "Production code says why in plain words; requirement ids (R-n.n), 'SPEC §' and issue numbers "
        "belong in tests' docstrings and docs/traceability.md:\n" + "\n".join(found)
    )
