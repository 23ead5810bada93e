"""Builders for the memory tool tests: keys that may use the tools, the tools' names, a model's call."""
from __future__ import annotations

import json

from django.utils import timezone

from core_memory.base.callers import Caller
from core_memory.keys.models import ALL_INDEXES
from memory.models import MemoryRecord
from memory.tools.calls import memory_tool_call
from tests.factories import make_key, make_record

NOW = timezone.now()


PROVENANCE = {"thread_id": "thr_1", "item_ids": ["itm_1", "itm_2"], "response_id": "resp_1"}


TOOL_CAPABILITIES = ("knowledge", "memory")


def tool_key(tenant, *, capabilities=TOOL_CAPABILITIES, read=(ALL_INDEXES,), write=(ALL_INDEXES,), **memory):
    config = {"retrieval_tool": True, "write_tool": True, **memory}
    key, _secret = make_key(tenant.organisation, capabilities=capabilities, read=read, write=write, memory=config)
    return key


def search_name(index) -> str:
    return f"memory__{index.id}__search"


def write_name(index) -> str:
    return f"memory__{index.id}__write"


def call(key, name, arguments, *, subject="anna") -> dict:
    return json.loads(
        memory_tool_call(
            caller=Caller(key=key, subject=subject), tool_name=name, arguments=json.dumps(arguments), provenance=PROVENANCE, now=NOW
        )
    )


def record(index, text: str, **fields) -> MemoryRecord:
    """A record made directly, changed at NOW unless told."""
    return make_record(index, text, changed_at=fields.pop("changed_at", NOW), **fields)
