"""The most frequent block's first pages in one statement written once in SQL: a block that
names every type, without the block's own filters (metadata, a least confidence) and without
decay, so that a record's effective confidence is its confidence.

memory.injection.walk builds each section's statement through the ORM for every kind of block;
building and compiling them (a dozen querysets each) cost more of a block than PostgreSQL took
to answer. Here they are as the ORM compiles them for this case — the same conditions, the same
order, the same columns — so the pages are the same, which
tests/memory/injection/test_first_pages.py checks against the ORM's on a varied store.
"""
from __future__ import annotations

from datetime import datetime

from django.db import connections, router

from core_memory.base.callers import Caller
from memory.models import MemoryRecord
from stores.models import KnowledgeIndex

# The records a section may show: the index's active, unexpired, not deleted ones, of one person
# or shared.
_VISIBLE = """record.organisation_id = %(organisation)s AND record.index_id = %(index)s AND NOT (record.status = 'deleted')
    AND {person} AND (record.expires_at IS NULL OR record.expires_at > %(now)s) AND record.status = 'active'"""
_HERS, _SHARED = "record.subject = %(subject)s", "record.subject IS NULL"
_CONFIDENCE = "record.confidence DESC, record.retrieval_count DESC, record.id ASC"
_OWN_SECTION_TYPES = "NOT (record.type IN ('commitment', 'behaviour', 'episode'))"
_SELECT = "SELECT {columns}, record.confidence AS effective_confidence FROM memory_memoryrecord record"

# Each part's statement, its page's size the parameter `page_<its name>`.
_PARTS = {
    "commitments": "({select} WHERE {visible} AND record.type = 'commitment' AND NOT record.done"
    " ORDER BY record.due_at ASC NULLS LAST, " + _CONFIDENCE + " LIMIT %(page_commitments)s)",
    "behaviour": "{select} WHERE {hers} AND record.type = 'behaviour' ORDER BY record.created_at DESC, " + _CONFIDENCE
    + " LIMIT %(page_behaviour)s",
    "about_this_person": "{select} WHERE {hers} AND " + _OWN_SECTION_TYPES + " ORDER BY " + _CONFIDENCE + " LIMIT %(page_about_this_person)s",
    "organisation": "{select} WHERE {shared} AND " + _OWN_SECTION_TYPES + " ORDER BY " + _CONFIDENCE + " LIMIT %(page_organisation)s",
    "lessons": "{select} WHERE {hers} AND " + _OWN_SECTION_TYPES + " AND record.type = 'lesson' ORDER BY " + _CONFIDENCE
    + " LIMIT %(page_lessons)s",
    "past_sessions": "{select} WHERE {sessions} AND record.type = 'episode' ORDER BY record.created_at DESC, " + _CONFIDENCE
    + " LIMIT %(page_past_sessions)s",
}
# Hers and the shared open commitments merged, in their order (memory.injection.pages.merged_page).
_MERGED = "{hers} UNION ALL {shared} ORDER BY due_at ASC NULLS LAST, effective_confidence DESC, retrieval_count DESC, id ASC LIMIT %(page_commitments)s"

_statements: dict[tuple, str] = {}


def _statement(columns: tuple[str, ...], names: tuple[str, ...], *, person: bool) -> str:
    shape = (columns, names, person)
    statement = _statements.get(shape)
    if statement is None:
        select = _SELECT.format(columns=", ".join(f'record."{name}"' for name in columns))
        hers, shared = _VISIBLE.format(person=_HERS), _VISIBLE.format(person=_SHARED)
        parts = []
        for place, name in enumerate(names):
            if name == "commitments":
                part = _PARTS[name].format(select=select, visible=shared)
                if person:
                    part = _MERGED.format(hers=_PARTS[name].format(select=select, visible=hers), shared=part)
            else:
                part = _PARTS[name].format(select=select, hers=hers, shared=shared, sessions=hers if person else shared)
            parts.append(f"(SELECT {place} AS part, row_number() OVER () AS rank, page.* FROM ({part}) AS page)")
        statement = _statements[shape] = " UNION ALL ".join(parts) + " ORDER BY 1, 2"
    return statement


def first_pages_rows(
    *, columns: tuple[str, ...], caller: Caller, index: KnowledgeIndex, now: datetime, page_sizes: dict[str, int]
) -> dict[str, list[MemoryRecord]]:
    """Each named section's first page (`page_sizes`: its name and its page's size) for the
    caller's person (or, for nobody, the shared records): records with `columns` and their
    effective confidence, in the section's order."""
    names = tuple(page_sizes)
    # In the model's order, as Model.from_db reads them.
    columns = tuple(field.attname for field in MemoryRecord._meta.concrete_fields if field.attname in columns)
    parameters = {"organisation": caller.organisation_id, "index": index.pk, "subject": caller.subject, "now": now}
    parameters.update({f"page_{name}": size for name, size in page_sizes.items()})
    alias = router.db_for_read(MemoryRecord)
    connection = connections[alias]
    converters = [
        (place, field.from_db_value)
        for place, field in enumerate(MemoryRecord._meta.get_field(name) for name in columns)
        if hasattr(field, "from_db_value")
    ]
    with connection.cursor() as cursor:
        cursor.execute(_statement(columns, names, person=caller.subject is not None), parameters)
        rows = cursor.fetchall()
    found: dict[str, list[MemoryRecord]] = {name: [] for name in names}
    for part, _rank, *values in rows:
        effective = values.pop()
        for place, convert in converters:
            values[place] = convert(values[place], None, connection)
        record = MemoryRecord.from_db(alias, columns, values)
        record.effective_confidence = effective
        found[names[part]].append(record)
    return found
