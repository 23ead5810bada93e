"""Opaque, prefixed, time-ordered ids (`org_…`, `key_…`, `mem_…`).

The part after the prefix is a ULID in lower-case Crockford base32: 48 bits of
milliseconds then 80 random bits, so ids sort by creation time and cursor
pagination can order on the primary key alone.
"""
import secrets
import threading
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


_lock = threading.Lock()
_last = (0, 0)  # (milliseconds, random part) of the previous id made by this process


def new_id(prefix: str) -> str:
    """Monotonic within a process: ids made in the same millisecond count up from a
    random start (the ULID spec's monotonic mode), so "newest first" holds exactly."""
    global _last
    with _lock:
        milliseconds = time.time_ns() // 1_000_000
        previous_milliseconds, previous_random = _last
        if milliseconds <= previous_milliseconds and previous_random < 2**80 - 1:
            milliseconds, random_part = previous_milliseconds, previous_random + 1
        else:
            random_part = secrets.randbits(79)  # headroom to count up within one millisecond
        _last = (milliseconds, random_part)
    return f"{prefix}_{_encode(milliseconds, 10)}{_encode(random_part, 16)}"


def PrefixedIdField(prefix: str) -> models.CharField:  # noqa: N802 — reads as a field class
    return models.CharField(primary_key=True, max_length=40, editable=False, default=partial(new_id, prefix))
