"""Who asks, as one value.

Built once where authentication resolves the key — the API's base view (`CoreApi.caller`), the
MCP server, a turn's plan — and handed to what reads or writes for her, instead of a key and a
person travelling apart through every call. What the caller may do is asked of the caller
(`may`, `may_read`, `may_write`), which reads it from its key.

The console acts for the organisation itself, with no key: `Caller.console` is that caller,
which no capability or policy narrows. Only what the console calls takes one (a person's
export); a function that needs a key's settings (its decay, its memory tools) needs a key's
caller."""
from __future__ import annotations

from dataclasses import dataclass

from core_memory.base.replicas import Reader
from core_memory.keys.models import ApiKey


@dataclass(frozen=True)
class Caller:
    """A key of one organisation (its capabilities and its policy's rights), acting for one
    person (`subject`) or for nobody in particular (None). `by_subject_token` when the key acts
    through a subject token: bound to one person, it never manages the organisation."""

    key: ApiKey | None
    subject: str | None = None
    by_subject_token: bool = False
    # The organisation of a caller without a key (`Caller.console`); a key's caller reads its key's.
    console_organisation_id: str | None = None

    @classmethod
    def console(cls, *, organisation_id: str, subject: str | None = None) -> Caller:
        """The organisation itself, through its console: no key, so every index and every right."""
        return cls(key=None, subject=subject, console_organisation_id=organisation_id)

    @property
    def organisation_id(self) -> str:
        return self.key.organisation_id if self.key is not None else self.console_organisation_id

    @property
    def reader(self) -> Reader:
        """Whose writes this caller's reads must see, on a replica (core_memory.base.replicas)."""
        return Reader(organisation_id=self.organisation_id, person=self.subject, key_id=self.key.id if self.key is not None else None)

    @property
    def capabilities(self) -> frozenset[str]:
        """The key's capabilities, as this caller holds them (a subject token never manages)."""
        if self.key is None:
            return frozenset()
        return frozenset(capability for capability in self.key.capabilities or [] if self.may(capability))

    def may(self, capability: str) -> bool:
        """Whether the caller holds `capability`: the key's, except `management` through a
        subject token (managing the organisation is not one person's). The console holds none:
        capabilities open the API's routes, and the console has routes of its own."""
        if self.key is None or (capability == "management" and self.by_subject_token):
            return False
        return self.key.has_capability(capability)

    def may_read(self, index_id: str) -> bool:
        """Whether the key's policy lets it read the index (the console reads every index)."""
        return self.key is None or self.key.may_read(index_id)

    def may_write(self, index_id: str) -> bool:
        """Whether the key's policy lets it write the index (the console writes every index)."""
        return self.key is None or self.key.may_write(index_id)
