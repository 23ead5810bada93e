def pytest_report_header(config):
    from tests.fuzz import test_schemathesis as fuzz

    return f"fuzz: seed {fuzz.SEED} (FUZZ_SEED={fuzz.SEED} sends these cases again)"


def pytest_terminal_summary(terminalreporter):
    """The fuzz step's figures for CI's log: its seed, cases sent, operations, statuses by class."""
    from tests.fuzz import test_schemathesis as fuzz

    if fuzz.SENT:
        terminalreporter.write_line(f"fuzz: seed {fuzz.SEED} (FUZZ_SEED={fuzz.SEED} sends these cases again)")
        statuses = ", ".join(f"{name} {count}" for name, count in sorted(fuzz.STATUSES.items()))
        terminalreporter.write_line(
            f"fuzz: {sum(fuzz.SENT.values())} cases over {len(fuzz.SENT)} operations "
            f"(fewest {min(fuzz.SENT.values())}, most {max(fuzz.SENT.values())}); statuses: {statuses}"
        )
