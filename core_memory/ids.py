"""Opaque, prefixed, time-ordered ids (`org_…`, `key_…`, `mem_…`).

The part after the prefix is a ULID in lower-case Crockford base32: 48 bits of
milliseconds then 80 random bits, so ids sort by creation time and cursor
pagination can order on the primary key alone.
"""
import secrets
import time
from functools import partial

from django.db import models

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"


def _encode(number: int, length: int) -> str:
    characters = []
    for _ in range(length):
        number, remainder = divmod(number, 32)
        characters.append(_ALPHABET[remainder])
    return "".join(reversed(characters))


def new_id(prefix: str) -> str:
    milliseconds = time.time_ns() // 1_000_000
    return f"{prefix}_{_encode(milliseconds, 10)}{_encode(secrets.randbits(80), 16)}"


def PrefixedIdField(prefix: str) -> models.CharField:  # noqa: N802 — reads as a field class
    return models.CharField(primary_key=True, max_length=40, editable=False, default=partial(new_id, prefix))
