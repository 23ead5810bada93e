"""How extraction may read a thread (core_memory.pii.selectors.thread_read_mode, R-8.8)."""
import pytest

from core_memory.base.callers import Caller
from core_memory.keys.services import key_delete, key_revoke
from core_memory.pii.models import ThreadPlaceholders
from core_memory.pii.selectors import ReadMode, thread_read_mode
from core_memory.threads.models import Thread
from core_memory.threads.services import ItemDraft, thread_create, thread_items_append
from tests.factories import make_key

pytestmark = pytest.mark.django_db


def older_thread(organisation, key, *, redacted_values: dict | None = None) -> Thread:
    """A thread from before the marking existed: items, no mark, and the placeholders Core stored then."""
    thread = thread_create(caller=Caller(key=key, subject="anna"))
    Thread.objects.filter(pk=thread.pk).update(item_count=1)
    if redacted_values is not None:
        ThreadPlaceholders.objects.create(thread=thread, organisation=organisation, values=redacted_values, counters={"EMAIL": 1})
    thread.refresh_from_db()
    return thread


def test_a_thread_a_redacting_key_wrote_into_is_marked_and_redacted(tenant):
    """R-8.8: Core marks a thread the first time a redacting key writes to it."""
    key, _ = make_key(tenant.organisation, pii_redaction=True)
    thread = thread_create(caller=Caller(key=tenant.key, subject="anna"))

    thread_items_append(thread=thread, caller=Caller(key=key), drafts=[ItemDraft(role="user", content="Hallo")])

    thread.refresh_from_db()
    assert thread.redacting_key_wrote_at is not None
    assert thread_read_mode(thread=thread) == ReadMode.REDACT


def test_a_marked_thread_stays_redacted_after_its_key_stops_redacting_or_is_deleted(tenant):
    key, _ = make_key(tenant.organisation, pii_redaction=True)
    thread = thread_create(caller=Caller(key=key, subject="anna"))
    thread_items_append(thread=thread, caller=Caller(key=key), drafts=[ItemDraft(role="user", content="Hallo")])
    thread.refresh_from_db()

    key_delete(caller=Caller.system(organisation_id=key.organisation_id, actor="test"), key_id=key.id)

    assert thread_read_mode(thread=thread) == ReadMode.REDACT


def test_a_thread_only_non_redacting_keys_wrote_into_is_read_as_written(tenant):
    thread = thread_create(caller=Caller(key=tenant.key, subject="anna"))
    thread_items_append(thread=thread, caller=Caller(key=tenant.key), drafts=[ItemDraft(role="user", content="Mail jan@example.nl")])
    thread.refresh_from_db()

    assert thread.redacting_key_wrote_at is None
    assert thread_read_mode(thread=thread) == ReadMode.AS_WRITTEN


def test_an_older_thread_in_which_core_redacted_a_value_is_never_read(tenant):
    """R-8.8: judged by what is left of it — whatever its key is now."""
    key, _ = make_key(tenant.organisation, pii_redaction=True)
    thread = older_thread(tenant.organisation, key, redacted_values={"<EMAIL_1>": "jan@example.nl"})

    assert thread_read_mode(thread=thread) == ReadMode.NEVER
    key_delete(caller=Caller.system(organisation_id=key.organisation_id, actor="test"), key_id=key.id)
    assert thread_read_mode(thread=thread) == ReadMode.NEVER


def test_an_older_thread_in_which_nothing_was_found_is_redacted_while_its_redacting_key_exists(tenant):
    """R-8.8: a revoked key still exists; only deletion makes the thread read as written."""
    key, _ = make_key(tenant.organisation, pii_redaction=True)
    thread = older_thread(tenant.organisation, key, redacted_values={})

    assert thread_read_mode(thread=thread) == ReadMode.REDACT
    key_revoke(caller=Caller.system(organisation_id=key.organisation_id, actor="test"), key_id=key.id)
    assert thread_read_mode(thread=thread) == ReadMode.REDACT
    key_delete(caller=Caller.system(organisation_id=key.organisation_id, actor="test"), key_id=key.id)
    assert thread_read_mode(thread=thread) == ReadMode.AS_WRITTEN


def test_an_older_thread_follows_its_keys_setting_as_it_is_now(tenant):
    key, _ = make_key(tenant.organisation, pii_redaction=False)
    thread = older_thread(tenant.organisation, key)

    assert thread_read_mode(thread=thread) == ReadMode.AS_WRITTEN
    key.pii_redaction = True
    key.save(update_fields=["pii_redaction"])
    assert thread_read_mode(thread=thread) == ReadMode.REDACT


def test_a_read_mode_is_a_plain_string_for_storing_and_logging():
    assert [str(mode) for mode in ReadMode] == ["as_written", "redact", "never"]
    assert ReadMode.REDACT == "redact"
