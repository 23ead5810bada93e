"""Who asks, as one value, on the ground floor so that every floor takes it.

One of three, a closed set (`Caller.kind`), each tied to exactly one organisation and naming its
actor for the audit trail:

- a key's (`Caller(key=…, subject=…)`), built once where authentication resolves the key — the
  API's base view (`CoreApi.caller`), the MCP server, a turn's plan — acting for one person or for
  nobody in particular; what it may do is read from its key's capabilities and policy;
- an administrator's in the console (`Caller.console(organisation_id=…, actor=…)`), the
  organisation itself, which no capability or policy narrows;
- the system's (`Caller.system(organisation_id=…, actor=…)`), for background work and commands
  that act on no key's behalf, as the console does.

It is handed to what reads or writes for her, instead of a key, an organisation and a person
travelling apart through every call. What the caller may do is asked of the caller (`may`,
`may_read`, `may_write`). A function that needs a key's settings (its decay, its memory tools)
needs a key's caller."""
from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, ClassVar, Protocol

from core_memory.base.errors import ImproperlyScoped
from core_memory.base.replicas import Reader


class CallerKey(Protocol):
    """What a caller needs of its key: the keys app's `ApiKey` is one. The caller stands on the
    ground floor, so every floor can take it; the type names no model above it."""

    id: str
    organisation_id: str
    organisation: Any
    capabilities: list[str] | None

    def has_capability(self, capability: str) -> bool: ...

    def may_read(self, index_id: str) -> bool: ...

    def may_write(self, index_id: str) -> bool: ...


class CallerKind(StrEnum):
    KEY = "key"
    CONSOLE = "console"
    SYSTEM = "system"


@dataclass(frozen=True)
class Caller:
    """A key of one organisation (its capabilities and its policy's rights), acting for one
    person (`subject`) or for nobody in particular (None); or, without a key, the console's
    administrator or the system acting for the organisation. `by_subject_token` when the key acts
    through a subject token: bound to one person, it never manages the organisation.
    `organisation_id` and `actor` are always set (a key's caller reads both from its key)."""

    key: CallerKey | None = None
    subject: str | None = None
    by_subject_token: bool = False
    organisation_id: str = ""
    actor: str = ""
    kind: CallerKind = CallerKind.KEY

    # Authentication hands a key's caller over as the request's `user` (DRF asks these).
    is_authenticated: ClassVar[bool] = True
    is_anonymous: ClassVar[bool] = False

    def __post_init__(self) -> None:
        if self.key is not None:
            if self.kind != CallerKind.KEY:
                raise ValueError("Only a key's caller has a key.")
            if self.organisation_id and self.organisation_id != self.key.organisation_id:
                raise ValueError("A key's caller asks in its key's organisation.")
            object.__setattr__(self, "organisation_id", self.key.organisation_id)
            object.__setattr__(self, "actor", self.actor or self.key.id)
            return
        if self.kind == CallerKind.KEY:
            raise ValueError("A key's caller needs its key.")
        if not self.organisation_id or not self.actor:
            raise ValueError("A caller without a key names its organisation and its actor.")
        if self.by_subject_token:
            raise ValueError("Only a key acts through a subject token.")

    @classmethod
    def console(cls, *, organisation_id: str, actor: str, subject: str | None = None) -> Caller:
        """An administrator, for the organisation, through its console: every index and every right."""
        return cls(organisation_id=organisation_id, actor=actor, subject=subject, kind=CallerKind.CONSOLE)

    @classmethod
    def system(cls, *, organisation_id: str, actor: str, subject: str | None = None) -> Caller:
        """Core itself, for the organisation (background work, a command): as the console."""
        return cls(organisation_id=organisation_id, actor=actor, subject=subject, kind=CallerKind.SYSTEM)

    @property
    def whole_organisation_id(self) -> str:
        """The organisation of a caller that acts for all of it (the console's, the system's), for
        the services only such a caller may call; a key's caller there is a bug."""
        if self.key is not None:
            raise ImproperlyScoped("A key's caller is narrowed by its key's policy; this acts for the whole organisation.")
        return self.organisation_id

    def acting_for(self, subject: str | None) -> Caller:
        """The same caller asking for `subject` (the request's person, checked by whoever asks)."""
        return replace(self, subject=subject)

    @property
    def token_subject(self) -> str | None:
        """The person a subject token binds the caller to; None for any other caller."""
        return self.subject if self.by_subject_token else None

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
        subject token (managing the organisation is not one person's). The console and the system
        hold none: capabilities open the API's routes, and they do not ask through those."""
        if self.key is None or (capability == "management" and self.by_subject_token):
            return False
        return self.key.has_capability(capability)

    def may_read(self, index_id: str) -> bool:
        """Whether the key's policy lets it read the index (the console and the system read every index)."""
        return self.key is None or self.key.may_read(index_id)

    def may_write(self, index_id: str) -> bool:
        """Whether the key's policy lets it write the index (the console and the system write every index)."""
        return self.key is None or self.key.may_write(index_id)
