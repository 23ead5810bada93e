"""Who asks, as one value.

Built once where authentication resolves the key — the API's base view (`CoreApi.caller`), the
MCP server, a turn's plan — and handed to what reads or writes for her, instead of a key and a
person travelling apart through every call."""
from __future__ import annotations

from dataclasses import dataclass

from core_memory.keys.models import ApiKey


@dataclass(frozen=True)
class Caller:
    """A key of one organisation (its capabilities and its policy's rights), acting for one
    person (`subject`) or for nobody in particular (None)."""

    key: ApiKey
    subject: str | None = None

    @property
    def organisation_id(self) -> str:
        return self.key.organisation_id
