"""A new record and its first version written in one statement.

`record.save()` sends the record's INSERT, then django-simple-history's `post_save` builds a
historical model object and sends a second INSERT; a write that must first learn whether an
active record already holds its words sent a SELECT before both, and a savepoint around the
insert for the race where a concurrent write got there first. Here the record's INSERT skips
a row that the unique constraint on active texts would refuse (ON CONFLICT … DO NOTHING), and
the version is inserted from the row the INSERT returns, in the same statement, which also reads
the webhook subscriptions its event goes to: one round trip, no savepoint, and a version with
exactly the columns django-simple-history writes for a created record (`history_type` "+", the
change reason, the console user behind the request)."""
from __future__ import annotations

from functools import cache

from django.db import connection
from django.db.models.sql import InsertQuery
from django.utils import timezone
from simple_history.models import HistoricalRecords

from core_memory.webhooks.selectors import webhook_subscribers_statement
from memory.models import MemoryRecord, history_user
from memory.services.rules import UNIQUE_ACTIVE_TEXT

# The webhook event of a new record.
CREATED = "record.created"


def record_insert_versioned(*, record: MemoryRecord, reason: str) -> list[str] | None:
    """Inserts the unsaved `record` with its first version (`reason` its change reason), and
    answers the ids of its organisation's webhook subscriptions that ask for `record.created`
    (read in the same statement, for `webhook_event_emit_to`). None, writing nothing, when an
    active record of the same index, person and type holds the same normalised text (the one a
    write confirms instead)."""
    fields = [field for field in MemoryRecord._meta.local_concrete_fields if not field.generated]
    query = InsertQuery(MemoryRecord)
    query.insert_values(fields, [record])  # each field's pre_save, as save() does (created_at, updated_at)
    [(insert, params)] = query.get_compiler(connection=connection).as_sql()
    version = (getattr(record, "_history_date", timezone.now()), reason, "+", _version_user_id(record))
    before, after = _statement()
    with connection.cursor() as cursor:
        cursor.execute(before + insert + after, [*params, *version, record.organisation_id, CREATED])
        row = cursor.fetchone()
    if row is None:
        return None
    record.search_vector, subscribers = row
    record._state.adding = False
    record._state.db = connection.alias
    return list(subscribers)


def _version_user_id(record: MemoryRecord):
    """The version's `history_user`, as django-simple-history finds it: set on the record, else
    the console user of the request its middleware keeps (an API key's caller is none)."""
    try:
        user = record._history_user
    except AttributeError:
        request = getattr(HistoricalRecords.context, "request", None)
        user = history_user(request=request if getattr(getattr(request, "user", None), "is_authenticated", False) else None)
    return getattr(user, "pk", None)


@cache
def _statement() -> tuple[str, str]:
    """The statement before and after the record's INSERT, built once from the models."""
    quote = connection.ops.quote_name
    constraint = next(item for item in MemoryRecord._meta.constraints if item.name == UNIQUE_ACTIVE_TEXT)
    target = ", ".join(quote(MemoryRecord._meta.get_field(name).column) for name in constraint.fields)
    connection.ensure_connection()
    predicate = constraint._get_condition_sql(MemoryRecord, connection.schema_editor())
    history = MemoryRecord.history.model
    tracked = history.tracked_fields
    columns = [quote(history._meta.get_field(field.name).column) for field in tracked]
    columns += [quote(history._meta.get_field(name).column) for name in ("history_date", "history_change_reason", "history_type", "history_user")]
    sources = ", ".join(f"created.{quote(field.column)}" for field in tracked)
    search_vector = quote(MemoryRecord._meta.get_field("search_vector").column)
    return "WITH created AS (", (
        f" ON CONFLICT ({target}) WHERE {predicate} DO NOTHING RETURNING *), "
        f"version AS (INSERT INTO {quote(history._meta.db_table)} ({', '.join(columns)}) "
        f"SELECT {sources}, %s, %s, %s, %s FROM created) "
        f"SELECT created.{search_vector}, ARRAY({webhook_subscribers_statement()}) FROM created"
    )
