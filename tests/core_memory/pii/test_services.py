"""A thread's placeholders, stored (core_memory.pii.services, R-8.8): one numbering per thread,
kept across turns and extraction windows, safe when two of them redact at once."""
import threading

import phonenumbers
import pytest
from django.db import connections, transaction

from core_memory.base.callers import Caller
from core_memory.pii.models import ThreadPlaceholders
from core_memory.pii.placeholders import RedactionError
from core_memory.pii.selectors import thread_placeholders
from core_memory.pii.services import person_placeholders_erase, thread_texts_redact
from core_memory.threads.services import thread_create
from tests.locks import sessions_blocked_within

LOCK_WAIT_SECONDS = 10

pytestmark = pytest.mark.django_db


@pytest.fixture
def thread(tenant):
    return thread_create(caller=Caller(key=tenant.key, subject="anna"))


def test_a_value_keeps_its_placeholder_on_every_later_call_and_new_values_get_the_next_number(thread):
    """R-8.8: numbered consistently within a thread, across turns."""
    first = thread_texts_redact(thread=thread, texts=["Mail jan@example.nl of bel 06-12345678"])
    second = thread_texts_redact(thread=thread, texts=["Mijn nummer is +31 6 12345678", "Nieuw: piet@example.nl, oud: jan@example.nl"])

    assert first.texts == ["Mail <EMAIL_1> of bel <PHONE_1>"]
    assert second.texts == ["Mijn nummer is <PHONE_1>", "Nieuw: <EMAIL_2>, oud: <EMAIL_1>"]
    assert dict(second.placeholders.values) == {"<EMAIL_1>": "jan@example.nl", "<PHONE_1>": "06-12345678", "<EMAIL_2>": "piet@example.nl"}
    assert second.placeholders.restore("Ik mail <EMAIL_2> en bel <PHONE_1>.") == "Ik mail piet@example.nl en bel 06-12345678."


def test_the_placeholders_are_stored_with_the_thread_and_its_organisation(thread):
    thread_texts_redact(thread=thread, texts=["Mail jan@example.nl"])

    stored = ThreadPlaceholders.objects.get()
    assert (stored.thread_id, stored.organisation_id) == (thread.id, thread.organisation_id)
    assert (stored.values, stored.counters) == ({"<EMAIL_1>": "jan@example.nl"}, {"EMAIL": 1})
    assert thread_placeholders(thread=thread).values == {"<EMAIL_1>": "jan@example.nl"}


def test_each_thread_numbers_its_own_values(tenant, thread):
    other = thread_create(caller=Caller(key=tenant.key, subject="anna"))
    thread_texts_redact(thread=thread, texts=["jan@example.nl"])

    redaction = thread_texts_redact(thread=other, texts=["piet@example.nl en jan@example.nl"])

    assert redaction.texts == ["<EMAIL_1> en <EMAIL_2>"]
    assert dict(redaction.placeholders.values) == {"<EMAIL_1>": "piet@example.nl", "<EMAIL_2>": "jan@example.nl"}


def test_texts_without_personal_data_store_nothing(thread):
    redaction = thread_texts_redact(thread=thread, texts=["Hallo", "De afspraak is op 30-11-2026 om 14:30."])

    assert redaction.texts == ["Hallo", "De afspraak is op 30-11-2026 om 14:30."]
    assert redaction.placeholders.values == {}
    assert not ThreadPlaceholders.objects.exists()


def test_texts_with_only_known_values_write_nothing(thread, django_assert_num_queries):
    thread_texts_redact(thread=thread, texts=["jan@example.nl"])

    with django_assert_num_queries(1):  # reading the placeholders; no lock, no write
        redaction = thread_texts_redact(thread=thread, texts=["Nog eens jan@example.nl"])

    assert redaction.texts == ["Nog eens <EMAIL_1>"]


def test_a_failing_detection_raises_and_stores_nothing(thread, monkeypatch):
    """R-8.8 `pii_redaction_failed`: nothing of the texts may be sent, nothing is numbered."""
    monkeypatch.setattr(phonenumbers, "PhoneNumberMatcher", lambda *args, **kwargs: 1 / 0)

    with pytest.raises(RedactionError):
        thread_texts_redact(thread=thread, texts=["mail jan@example.nl, bel 06-12345678"])

    assert not ThreadPlaceholders.objects.exists()


def test_erasing_a_person_removes_her_threads_placeholders_only(tenant, other_tenant, thread):
    """R-3.4: the placeholders hold real values, so they go with her."""
    brams = thread_create(caller=Caller(key=tenant.key, subject="bram"))
    elsewhere = thread_create(caller=Caller(key=other_tenant.key, subject="anna"))
    for each in (thread, brams, elsewhere):
        thread_texts_redact(thread=each, texts=["jan@example.nl"])

    erased = person_placeholders_erase(caller=Caller.system(organisation_id=tenant.organisation.id, actor="test"), subject="anna")

    assert erased == 1
    assert set(ThreadPlaceholders.objects.values_list("thread_id", flat=True)) == {brams.id, elsewhere.id}


@pytest.mark.django_db(transaction=True)
def test_a_redaction_waits_for_another_on_the_same_thread_and_numbers_after_it(tenant):
    """Two turns at once on one thread never give one placeholder to two values: the second
    waits for the first's lock and reads what it stored."""
    thread = thread_create(caller=Caller(key=tenant.key, subject="anna"))
    thread_texts_redact(thread=thread, texts=["jan@example.nl"])
    locked, release, results = threading.Event(), threading.Event(), {}

    def another_turn():
        try:
            with transaction.atomic():
                stored = ThreadPlaceholders.objects.select_for_update().get(thread_id=thread.id)
                locked.set()
                release.wait(LOCK_WAIT_SECONDS)
                stored.values = {**stored.values, "<EMAIL_2>": "piet@example.nl"}
                stored.counters = {"EMAIL": 2}
                stored.save()
        finally:
            connections.close_all()

    def this_turn():
        try:
            results["redaction"] = thread_texts_redact(thread=thread, texts=["kees@example.nl of jan@example.nl"])
        finally:
            connections.close_all()

    first = threading.Thread(target=another_turn)
    first.start()
    assert locked.wait(LOCK_WAIT_SECONDS)
    second = threading.Thread(target=this_turn)
    second.start()
    blocked = sessions_blocked_within(LOCK_WAIT_SECONDS)
    release.set()
    first.join(LOCK_WAIT_SECONDS)
    second.join(LOCK_WAIT_SECONDS)

    assert blocked == 1
    assert results["redaction"].texts == ["<EMAIL_3> of <EMAIL_1>"]
    assert ThreadPlaceholders.objects.get().values == {
        "<EMAIL_1>": "jan@example.nl", "<EMAIL_2>": "piet@example.nl", "<EMAIL_3>": "kees@example.nl"
    }
