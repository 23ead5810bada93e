"""Tenancy in the structure.

Every model that belongs to an organisation gets its rows through one of three doors
on its manager, so that a query without a scope cannot be written by accident:

- `for_organisation(organisation)`: the organisation's rows (an id or an object);
- `for_key(key)` on the models a key's policy limits (indexes, stores, records): what
  that key may use;
- `unscoped()`: every organisation's rows, for work that is about all of them (the
  beat purges, the scheduler, authentication by a secret) — explicit, so a reviewer
  sees it.

`tests/test_tenancy.py` fails when code reads a tenant model's rows through
`.objects` any other way. Writes (`create`, `get_or_create`, …) name the organisation
themselves and stay open.
"""
from __future__ import annotations

from typing import Protocol, Self

from django.db import models

SCOPED_ENTRIES = ("for_organisation", "for_key", "unscoped")
# Writes that name every field themselves, the organisation included.
WRITE_ENTRIES = ("create", "bulk_create", "get_or_create", "update_or_create")


class OrganisationLike(Protocol):
    """What code below the organisations app needs of an organisation: its id. An
    `organisations.Organisation` is one; the type names no model, so an app below it can
    take an organisation without importing one."""

    @property
    def pk(self) -> str: ...


def organisation_id_of(organisation: OrganisationLike | str) -> str:
    """An organisation's id, given the organisation or its id."""
    return organisation if isinstance(organisation, str) else organisation.pk


class TenantQuerySet(models.QuerySet):
    """A queryset of rows that belong to one organisation through `organisation_lookup`
    (`organisation`, or a path such as `key__organisation` for rows owned by a key)."""

    organisation_lookup = "organisation"

    def for_organisation(self, organisation) -> Self:
        return self.filter(**{f"{self.organisation_lookup}_id": organisation_id_of(organisation)})

    def unscoped(self) -> Self:
        return self.all()
