"""`lazily_committed` (docs/decisions.md "Commits")."""
from __future__ import annotations

import pytest
from django.db import connection, transaction

from core_memory.base.transactions import lazily_committed


def _synchronous_commit() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_its_own_transaction_commits_without_waiting_and_the_next_one_waits_again():
    with lazily_committed():
        assert _synchronous_commit() == "off"

    assert _synchronous_commit() == "on"


@pytest.mark.django_db(transaction=True)
def test_inside_a_transaction_already_open_the_outer_commit_keeps_waiting():
    """The caller's writes must stay as durable as the caller asked."""
    with transaction.atomic():
        with lazily_committed():
            assert _synchronous_commit() == "on"
        assert _synchronous_commit() == "on"
