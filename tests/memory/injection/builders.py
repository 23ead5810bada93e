"""Builders for the memory block tests: records set up directly, keys that inject, the block itself."""
from __future__ import annotations

import json

from django.utils import timezone

from core_memory.base.callers import Caller
from core_memory.keys.models import ALL_INDEXES
from memory.injection.walk import injection_block_build
from memory.models import MemoryRecord
from stores.models import MemoryStore, default_injection
from tests.factories import make_key, make_record

NOW = timezone.now()


def record(index, text: str, **fields) -> MemoryRecord:
    """A record made directly, changed at NOW unless told."""
    return make_record(index, text, changed_at=fields.pop("changed_at", NOW), **fields)


def injecting_key(tenant, *, capabilities=None, read=(ALL_INDEXES,), decay=None, **injection):
    memory = {"injection": {"enabled": True, "index_id": tenant.index.id, **injection}}
    if decay:
        memory["decay"] = {"half_life_days": decay}
    extra = {"capabilities": capabilities} if capabilities is not None else {}
    key, _secret = make_key(tenant.organisation, read=read, memory=memory, **extra)
    return key


def store_injection(index, **settings):
    MemoryStore.objects.filter(index=index).update(injection={**default_injection(), **settings})


def build(key, *, subject: str | None = "anna", topic: str = "", agent_version=None, now=None):
    return injection_block_build(caller=Caller(key=key, subject=subject), agent_version=agent_version, topic=topic, now=now or NOW)


def sections(text: str) -> dict[str, list[dict]]:
    """The block parsed back: label -> its lines as objects, in order."""
    parsed: dict[str, list[dict]] = {}
    current = None
    for line in text.split("\n") if text else []:
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1]
            parsed[current] = []
        else:
            parsed[current].append(json.loads(line))
    return parsed


def texts(text: str, section: str) -> list[str]:
    return [line["text"] for line in sections(text).get(section, [])]
