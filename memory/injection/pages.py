"""The walk's reading: each section's candidates in LIMITed pages, and the sections' first
pages read together in one statement.

A section reads its records a page at a time (its cap plus a small margin), the next page only
while budget skips used the page up and budget is left, at most `MAX_PAGES` pages. The first
page of every section a block is sure to read is known before the walk starts, so
`first_pages_read` reads them all in one round trip: each section's own statement, as the ORM
compiles it, side by side under UNION ALL, and each row made a record as the ORM makes it. A
section then starts from its page instead of asking for it.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from django.db import connections
from django.db.models import QuerySet

from memory.models import MemoryRecord

PAGE_MARGIN = 10
MAX_PAGES = 3


class Budget(Protocol):
    @property
    def exhausted(self) -> bool: ...


def pages(queryset: QuerySet, *, page_size: int, block: Budget, first: list[MemoryRecord] | None = None) -> Iterator[MemoryRecord]:
    """The queryset in LIMITed pages; the next page only while budget is left. `first`, when
    given, is its first page already read."""
    for page in range(MAX_PAGES):
        if page and block.exhausted:
            return
        rows = first if page == 0 and first is not None else list(queryset[page * page_size : (page + 1) * page_size])
        yield from rows
        if len(rows) < page_size:
            return


def merged_page(querysets: list[QuerySet], *, order: tuple, page: int, page_size: int) -> QuerySet:
    """Page `page` of the union of `querysets` (hers and the shared ones) in `order`: a UNION ALL
    of each part's own ordered top rows, so that each part reads only its first rows through its
    index, where one query over "hers OR shared" would read and sort every row of the whole
    organisation."""
    if len(querysets) == 1:
        return querysets[0].order_by(*order)[page * page_size : (page + 1) * page_size]
    stop = (page + 1) * page_size
    first, *others = (queryset.order_by(*order)[:stop] for queryset in querysets)
    return first.union(*others, all=True).order_by(*order)[page * page_size : stop]


def merged_pages(
    querysets: list[QuerySet], *, order: tuple, page_size: int, block: Budget, first: list[MemoryRecord] | None = None
) -> Iterator[MemoryRecord]:
    """Like `pages` over the union of `querysets` in `order` (`merged_page`), one query per page."""
    for page in range(MAX_PAGES):
        if page and block.exhausted:
            return
        if page == 0 and first is not None:
            rows = first
        else:
            rows = list(merged_page(querysets, order=order, page=page, page_size=page_size))
        yield from rows
        if len(rows) < page_size:
            return


def first_pages_read(statements: dict[str, QuerySet]) -> dict[str, list[MemoryRecord]]:
    """Each named queryset's records (each ordered and LIMITed: a section's first page), all
    read in one statement. The records are what iterating each queryset would give: its own SQL
    as the ORM compiles it, its rows made records by the ORM's own reading of them."""
    if not statements:
        return {}
    if len(statements) == 1:
        ((name, queryset),) = statements.items()
        return {name: list(queryset)}
    alias = next(iter(statements.values())).db
    readers, parts, parameters = [], [], []
    for place, queryset in enumerate(statements.values()):
        compiler = queryset.query.get_compiler(using=alias)
        sql, part_parameters = compiler.as_sql()
        # The place and the row's rank within its part: the order the part's own statement gives.
        parts.append(f"SELECT {place} AS part, row_number() OVER () AS rank, page.* FROM ({sql}) AS page")
        parameters.extend(part_parameters)
        readers.append(compiler)
    rows: list[list[tuple]] = [[] for _ in statements]
    with connections[alias].cursor() as cursor:
        cursor.execute(" UNION ALL ".join(f"({part})" for part in parts) + " ORDER BY 1, 2", parameters)
        for row in cursor.fetchall():
            rows[row[0]].append(row[2:])
    return {name: _records(compiler, part_rows, alias=alias) for name, compiler, part_rows in zip(statements, readers, rows, strict=True)}


def _records(compiler, rows: list[tuple], *, alias: str) -> list[MemoryRecord]:
    """The rows of one compiled statement made records, as django.db.models.query.ModelIterable makes them."""
    select, klass_info, annotation_columns = compiler.select, compiler.klass_info, compiler.annotation_col_map
    start, end = klass_info["select_fields"][0], klass_info["select_fields"][-1] + 1
    names = [column[0].target.attname for column in select[start:end]]
    records = []
    for row in compiler.results_iter([rows]):
        record = MemoryRecord.from_db(alias, names, row[start:end])
        for name, place in (annotation_columns or {}).items():
            setattr(record, name, row[place])
        records.append(record)
    return records
