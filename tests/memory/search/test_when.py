"""Times named in a question (issue 10, R-5.10): read in English and Dutch, relative to now."""
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from memory.search.when import time_windows

AMSTERDAM = ZoneInfo("Europe/Amsterdam")
# A Wednesday.
NOW = datetime(2026, 11, 18, 15, 30, tzinfo=AMSTERDAM)


def _day(year, month, day):
    return datetime(year, month, day, tzinfo=AMSTERDAM)


@pytest.mark.parametrize(
    ("question", "start", "end", "unit"),
    [
        ("What did she say yesterday?", _day(2026, 11, 17), _day(2026, 11, 18), "day"),
        ("Wat zei ze gisteren?", _day(2026, 11, 17), _day(2026, 11, 18), "day"),
        ("wat deed hij vandaag", _day(2026, 11, 18), _day(2026, 11, 19), "day"),
        ("What happened last week?", _day(2026, 11, 9), _day(2026, 11, 16), "week"),
        ("Wat gebeurde er vorige week?", _day(2026, 11, 9), _day(2026, 11, 16), "week"),
        ("Waar ging ze afgelopen weekend heen?", _day(2026, 11, 14), _day(2026, 11, 16), "week"),
        ("What did we agree this month?", _day(2026, 11, 1), _day(2026, 12, 1), "month"),
        ("Wat spraken we vorige maand af?", _day(2026, 10, 1), _day(2026, 11, 1), "month"),
        ("Which trips were last year?", _day(2025, 1, 1), _day(2026, 1, 1), "year"),
        ("Welke reizen waren vorig jaar?", _day(2025, 1, 1), _day(2026, 1, 1), "year"),
        ("What did Maria do in May 2023?", _day(2023, 5, 1), _day(2023, 6, 1), "month"),
        ("Wat deed Maria in mei 2023?", _day(2023, 5, 1), _day(2023, 6, 1), "month"),
        ("When did Melanie go camping in June?", _day(2026, 6, 1), _day(2026, 7, 1), "month"),
        # A month still to come this year is last year's.
        ("Wat deden ze in december?", _day(2025, 12, 1), _day(2026, 1, 1), "month"),
        ("What did Gina find on 1 February, 2023?", _day(2023, 2, 1), _day(2023, 2, 2), "day"),
        ("What painting did she show on October 13, 2023?", _day(2023, 10, 13), _day(2023, 10, 14), "day"),
        ("Wat gebeurde er op 8 mei 2023?", _day(2023, 5, 8), _day(2023, 5, 9), "day"),
        ("the meeting of 2023-05-08", _day(2023, 5, 8), _day(2023, 5, 9), "day"),
        ("How many times did she go to the beach in 2023?", _day(2023, 1, 1), _day(2024, 1, 1), "year"),
    ],
)
def test_a_named_time_is_read_into_its_window(question, start, end, unit):
    (window,) = time_windows(question, now=NOW)

    assert (window.start, window.end, window.unit) == (start, end, unit)


def test_a_time_ago_is_a_window_around_that_moment():
    (window,) = time_windows("Where did Caroline move from 4 years ago?", now=NOW)
    assert window.unit == "year"
    assert window.start == NOW - 4 * timedelta(days=365) - timedelta(days=365) / 2
    (dutch,) = time_windows("wat zei ze drie weken geleden", now=NOW)
    assert (dutch.start, dutch.end) == (NOW - timedelta(days=21 + 3.5), NOW - timedelta(days=21 - 3.5))


def test_a_window_reaches_past_its_end_for_what_is_told_later():
    """What happened in May is often told in June."""
    (window,) = time_windows("in May 2023", now=NOW)

    assert window.reach == _day(2023, 6, 1) + timedelta(days=31)


@pytest.mark.parametrize(
    "question", ["Where does Anna live?", "Hoe laat begint de dienst?", "it may rain", "0 days ago", "room 2023"]
)
def test_a_question_without_a_readable_time_has_no_window(question):
    assert time_windows(question, now=NOW) == []


def test_every_time_named_is_read_once():
    windows = time_windows("Between 8 May 2023 and last week", now=NOW)

    assert [(window.start.date().isoformat(), window.unit) for window in windows] == [("2023-05-08", "day"), ("2026-11-09", "week")]


def test_a_day_that_does_not_exist_is_read_as_its_month():
    (window,) = time_windows("Wat gebeurde er op 31 februari 2023?", now=NOW)

    assert (window.start, window.end, window.unit) == (_day(2023, 2, 1), _day(2023, 3, 1), "month")
