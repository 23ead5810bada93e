"""Times named in a question: "last week", "in May 2023", "vorige maand".

`time_windows(text, now=…)` reads the times a question names, in English and Dutch, into
windows [start, end) in the question's time zone (`now` carries it). Search boosts the
records written in a window rather than keeping only those: what happened in May is often
told in June ("we went camping last month"), so each window reaches `TOLD_LATER` beyond its
end. Whatever cannot be read is left alone; a question without times gets no windows.

Read: yesterday/gisteren, today/vandaag, this or last week/month/year (deze/vorige/afgelopen
week, maand; dit/vorig/afgelopen jaar), last weekend, N days/weeks/months/years ago
(N dagen/weken/maanden/jaar geleden, numbers as digits or words up to twelve), a month with or
without a year ("in May 2023", "mei 2023", "in June": the latest June up to now), a day
("8 May 2023", "May 8, 2023", "8 mei 2023", "2023-05-08"), a year ("in 2023").
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

MONTHS = {
    **{name: number for number, name in enumerate(
        ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"), 1)},
    **{name: number for number, name in enumerate(
        ("januari", "februari", "maart", "april", "mei", "juni", "juli", "augustus", "september", "oktober", "november", "december"), 1)},
    **{"jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9, "oct": 10, "okt": 10, "nov": 11, "dec": 12},
}
NUMBERS = {
    **{word: number for number, word in enumerate(
        ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"))},
    **{word: number for number, word in enumerate(
        ("nul", "een", "twee", "drie", "vier", "vijf", "zes", "zeven", "acht", "negen", "tien", "elf", "twaalf"))},
    "a": 1, "an": 1, "één": 1,
}
UNITS = {
    "day": "day", "days": "day", "dag": "day", "dagen": "day",
    "week": "week", "weeks": "week", "weken": "week",
    "month": "month", "months": "month", "maand": "month", "maanden": "month",
    "year": "year", "years": "year", "jaar": "year", "jaren": "year",
}
# A window's records, and those written up to this long after it (see the module docstring).
TOLD_LATER = {"day": timedelta(days=3), "week": timedelta(days=7), "month": timedelta(days=31), "year": timedelta(days=62)}

_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_NUMBER = r"\d{1,3}|" + "|".join(sorted(NUMBERS, key=len, reverse=True))
_UNIT = "|".join(sorted(UNITS, key=len, reverse=True))
_PATTERNS = [
    ("iso_day", re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")),
    ("day_month_year", re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th|e)?\s+({_MONTH})\.?,?\s+(\d{{4}})\b")),
    ("month_day_year", re.compile(rf"\b({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b")),
    ("month_year", re.compile(rf"\b({_MONTH})\.?,?\s+(\d{{4}})\b")),
    ("month", re.compile(rf"\b(?:in|during|tijdens|begin|eind|end of|early|late)\s+({_MONTH})\b")),
    ("year", re.compile(r"\b(?:in|during|tijdens|sinds|since)\s+((?:19|20)\d{2})\b")),
    ("ago", re.compile(rf"\b({_NUMBER})\s+({_UNIT})\s+(?:ago|geleden)\b")),
    ("relative", re.compile(r"\b(last|this|past|previous|vorige|vorig|afgelopen|deze|dit)\s+(week|weekend|month|year|maand|jaar)\b")),
    ("yesterday", re.compile(r"\b(yesterday|gisteren|eergisteren|today|vandaag|tonight|vanavond)\b")),
]


@dataclass(frozen=True)
class TimeWindow:
    start: datetime
    end: datetime
    unit: str

    @property
    def reach(self) -> datetime:
        """The window's end plus the time in which it is still told about."""
        return self.end + TOLD_LATER[self.unit]


def _day_start(day: date, now: datetime) -> datetime:
    return datetime.combine(day, time.min, tzinfo=now.tzinfo)


def _month_window(year: int, month: int, now: datetime) -> TimeWindow:
    start = date(year, month, 1)
    end = date(year + (month == 12), month % 12 + 1, 1)
    return TimeWindow(_day_start(start, now), _day_start(end, now), "month")


def _year_window(year: int, now: datetime) -> TimeWindow:
    return TimeWindow(_day_start(date(year, 1, 1), now), _day_start(date(year + 1, 1, 1), now), "year")


def _day_window(day: date, now: datetime) -> TimeWindow:
    return TimeWindow(_day_start(day, now), _day_start(day + timedelta(days=1), now), "day")


def _months_back(day: date, months: int) -> tuple[int, int]:
    index = day.year * 12 + day.month - 1 - months
    return index // 12, index % 12 + 1


def _relative(which: str, unit: str, now: datetime) -> TimeWindow:
    today = now.date()
    back = which in ("last", "past", "previous", "vorige", "vorig", "afgelopen")
    if unit == "weekend":
        saturday = today - timedelta(days=(today.weekday() - 5) % 7)
        if back and saturday + timedelta(days=1) >= today:
            saturday -= timedelta(days=7)
        return TimeWindow(_day_start(saturday, now), _day_start(saturday + timedelta(days=2), now), "week")
    if unit == "week":
        monday = today - timedelta(days=today.weekday()) - timedelta(days=7 * back)
        return TimeWindow(_day_start(monday, now), _day_start(monday + timedelta(days=7), now), "week")
    if unit in ("month", "maand"):
        return _month_window(*_months_back(today, int(back)), now)
    return _year_window(today.year - back, now)


def _ago(amount: int, unit: str, now: datetime) -> TimeWindow:
    """Around the moment `amount` units back: half a unit either side."""
    length = {"day": timedelta(days=1), "week": timedelta(days=7), "month": timedelta(days=30), "year": timedelta(days=365)}[unit]
    middle = now - amount * length
    return TimeWindow(middle - length / 2, middle + length / 2, unit)


def time_windows(text: str, *, now: datetime) -> list[TimeWindow]:
    """The windows of every time the text names that can be read, in the order found."""
    lowered = text.lower()
    windows: list[TimeWindow] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(lowered):
            if any(start < match.end() and match.start() < end for start, end in taken):
                continue  # a longer form ("8 May 2023") already read this part
            window = _read(kind, match.groups(), now)
            if window is not None:
                windows.append(window)
                taken.append(match.span())
    return windows


def _read(kind: str, groups: tuple, now: datetime) -> TimeWindow | None:
    try:
        if kind == "iso_day":
            return _day_window(date(int(groups[0]), int(groups[1]), int(groups[2])), now)
        if kind == "day_month_year":
            return _day_window(date(int(groups[2]), MONTHS[groups[1]], int(groups[0])), now)
        if kind == "month_day_year":
            return _day_window(date(int(groups[2]), MONTHS[groups[0]], int(groups[1])), now)
        if kind == "month_year":
            return _month_window(int(groups[1]), MONTHS[groups[0]], now)
        if kind == "month":
            month = MONTHS[groups[0]]
            year = now.year if month <= now.month else now.year - 1
            return _month_window(year, month, now)
        if kind == "year":
            return _year_window(int(groups[0]), now)
        if kind == "ago":
            amount = int(groups[0]) if groups[0].isdigit() else NUMBERS[groups[0]]
            return _ago(amount, UNITS[groups[1]], now) if amount else None
        if kind == "relative":
            return _relative(groups[0], groups[1], now)
        if kind == "yesterday":
            back = {"yesterday": 1, "gisteren": 1, "eergisteren": 2}.get(groups[0], 0)
            return _day_window(now.date() - timedelta(days=back), now)
    except (ValueError, OverflowError):
        return None  # "31 February 2023", year 0: not a time
    return None
