def pytest_terminal_summary(terminalreporter):
    """The fuzz step's figures for CI's log: cases sent, operations, statuses by class."""
    from tests.fuzz import test_schemathesis as fuzz

    if fuzz.SENT:
        statuses = ", ".join(f"{name} {count}" for name, count in sorted(fuzz.STATUSES.items()))
        terminalreporter.write_line(
            f"fuzz: {sum(fuzz.SENT.values())} cases over {len(fuzz.SENT)} operations "
            f"(fewest {min(fuzz.SENT.values())}, most {max(fuzz.SENT.values())}); statuses: {statuses}"
        )
