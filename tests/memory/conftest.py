"""Builders for the record tests: age records by moving their clock (`write` and `other_write` are in
tests/conftest.py), and read the console's record pages and their versions."""
from __future__ import annotations

from datetime import timedelta
from html import escape
from html.parser import HTMLParser

from django.contrib.admin.utils import quote
from django.utils import timezone

from audit.models import AuditEvent
from memory.models import MemoryRecord


def age(record: MemoryRecord, *, days: float, now=None) -> MemoryRecord:
    """Moves the record's decay clock `days` back from `now` (no history version: test set-up)."""
    changed_at = (now or timezone.now()) - timedelta(days=days)
    MemoryRecord.objects.unscoped().filter(pk=record.pk).update(changed_at=changed_at)
    record.changed_at = changed_at
    return record


RECORDS = "/console/memory/memoryrecord/"


def record_url(record: MemoryRecord, page: str = "change") -> str:
    return f"{RECORDS}{quote(record.id)}/{page}/"


def listed_ids(response) -> list[str]:
    return [record.id for record in response.context["cl"].result_list]


def read_events():
    return AuditEvent.objects.filter(action="memory.console_read").order_by("id")




class _VersionsTable(HTMLParser):
    """The rows of a page's versions table (memory.admin.columns.RecordColumns.versions_table): each cell's text and its HTML."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.rows: list[list[tuple[str, str]]] = []
        self._inside = self._in_body = False
        self._cell: list[str] | None = None
        self._html: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "table" and ("class", "memory-versions") in attrs:
            self._inside = True
        elif self._inside and tag == "tbody":
            self._in_body = True
        elif self._in_body and tag == "tr":
            self.rows.append([])
        elif self._in_body and tag == "td":
            self._cell, self._html = [], []
        elif self._cell is not None:
            self._html.append(self.get_starttag_text())

    def handle_endtag(self, tag):
        if tag == "table":
            self._inside = self._in_body = False
        elif self._cell is not None and tag == "td":
            self.rows[-1].append(("".join(self._cell).strip(), "".join(self._html).strip()))
            self._cell = None
        elif self._cell is not None:
            self._html.append(f"</{tag}>")

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
            self._html.append(escape(data, quote=False))


VERSION_COLUMNS = ("when", "change", "by", "text", "confidence", "metadata", "status", "confirmations")


def version_rows(page: str) -> list[dict[str, str]]:
    """Each version on the page as {column: text}, plus `<column>_html` for the highlighted cells."""
    parser = _VersionsTable()
    parser.feed(page)
    rows = []
    for cells in parser.rows:
        row = {}
        for name, (text, html) in zip(VERSION_COLUMNS, cells, strict=False):
            row[name] = text
            row[f"{name}_html"] = html
        rows.append(row)
    return rows
