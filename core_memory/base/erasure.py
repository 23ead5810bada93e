"""What the interfaces keep about a person, erased with her.

Erasing a person (core_memory.flows.erasure) is domain work, which never imports an interface;
but an interface keeps copies of what it answered (the API's idempotent answers). Each such
keeper registers here, when its app is ready, how to erase and count what it holds about her;
the erasure runs every one in its transaction and puts its count in the receipt.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class PersonDataKeeper:
    name: str  # the receipt's key
    erase: Callable[..., int]  # (organisation_id=, subject=) -> how many went
    count: Callable[..., int]  # (organisation_id=, subject=) -> how many would go


_KEEPERS: dict[str, PersonDataKeeper] = {}


def person_data_keeper_register(keeper: PersonDataKeeper) -> None:
    _KEEPERS[keeper.name] = keeper


def person_data_keepers() -> list[PersonDataKeeper]:
    return [_KEEPERS[name] for name in sorted(_KEEPERS)]
