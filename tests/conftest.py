from __future__ import annotations

from dataclasses import dataclass

import pytest

from memory.models import MemoryRecord
from memory.services import record_write
from tests.factories import OrganisationFactory, client_for, make_index, make_key, resolved_for


@dataclass
class Tenant:
    """An organisation with its owner key (every capability, every index) and one index,
    read for the owner key (`KnowledgeIndex.objects.for_key`), as services expect it."""

    organisation: object
    key: object
    secret: str
    index: object

    def client(self, *, subject: str | None = None):
        return client_for(self.secret, subject=subject)

    def key_client(self, *, subject: str | None = None, **rights):
        key, secret = make_key(self.organisation, **rights)
        return client_for(secret, subject=subject), key


def _tenant() -> Tenant:
    organisation = OrganisationFactory()
    key, secret = make_key(organisation, name="owner")
    index = resolved_for(key, make_index(organisation))
    return Tenant(organisation=organisation, key=key, secret=secret, index=index)


@pytest.fixture
def tenant(db) -> Tenant:
    return _tenant()


@pytest.fixture
def other_tenant(db) -> Tenant:
    return _tenant()


@pytest.fixture
def anonymous():
    return client_for(None)


@pytest.fixture
def write(tenant):
    """write(text, type="fact", subject=None, **fields) -> MemoryRecord, as the owner key, through the record service."""

    def _write(text: str, *, type: str = "fact", subject: str | None = None, index=None, **fields) -> MemoryRecord:
        return record_write(
            key=tenant.key, index=resolved_for(tenant.key, index or tenant.index), subject=subject, type=type, text=text, actor="test", **fields
        ).record

    return _write
