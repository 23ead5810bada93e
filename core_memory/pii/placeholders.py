"""Placeholders for one thread's personal data, and putting the real values back.

Pure functions over a `Placeholders` value; storing it is `core_memory.pii.services`.

- A placeholder is `<KIND_N>` (`<EMAIL_1>`, `<PHONE_2>`, `<IP_ADDRESS_1>`); N counts per
  kind within one thread, from 1.
- The same value gets the same placeholder every time. "The same" is judged on a
  normal form: e-mail in lower case, a phone number in E.164, IBAN, card and BSN as their
  letters and digits, an IP address as `ipaddress` writes it, a URL with its scheme and
  host in lower case and no trailing slash; in every kind Unicode spaces and invisible
  characters count as the detection reads them. `06-12345678` and `+31 6 12345678` therefore
  share one placeholder, which is restored as the form seen first.
- Text that already looks like a placeholder (a person typing `<EMAIL_1>`) is left as it
  is, and new numbers of its kind skip past it, so it is never restored into a value
  (look-alikes of other kinds, `<NAME_1>`, are left as they are and not remembered).
- `restore` replaces every known placeholder, also as a model tends to rewrite it (lower
  case, spaces inside the brackets, HTML- or Markdown-escaped brackets), and leaves
  unknown ones (`<EMAIL_9>`, `<NAME_1>`) as they are.
"""
from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TypeVar
from urllib.parse import urlsplit

import phonenumbers

from core_memory.pii.detection import (
    BSN,
    CREDIT_CARD,
    EMAIL,
    IBAN,
    IP_ADDRESS,
    KINDS,
    PHONE,
    PHONE_REGION,
    URL,
    Finding,
    findings_in,
    normalised,
)

T = TypeVar("T")

_LOOKS_LIKE_A_PLACEHOLDER = re.compile(r"(?:<|&lt;|\\<)\s*([A-Za-z][A-Za-z_]*?)_(\d{1,6})\s*(?:>|&gt;|\\>)")


class RedactionError(Exception):
    """Personal data could not be found in a text, so it must not be sent anywhere: a turn
    fails and an extraction window fails with this `code`."""

    code = "pii_redaction_failed"

    def as_dict(self) -> dict:
        return {"code": self.code, "message": "Personal data could not be redacted; nothing was sent to the model."}


def normal_form(kind: str, value: str) -> str:
    """What makes two writings of a value the same value (the module's docstring)."""
    value = normalised(value).strip()
    if kind == EMAIL:
        return value.lower()
    if kind == PHONE:
        try:
            number = phonenumbers.parse(value, PHONE_REGION)
        except phonenumbers.NumberParseException:
            return value
        return phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)
    if kind in (IBAN, CREDIT_CARD, BSN):
        return re.sub(r"[^0-9A-Za-z]", "", value).upper()
    if kind == IP_ADDRESS:
        try:
            return str(ipaddress.ip_interface(value.split("%")[0]))
        except ValueError:
            return value
    if kind == URL:
        url = value if re.match(r"(?i)^[a-z][a-z0-9+.\-]*://", value) else "http://" + value
        parts = urlsplit(url)
        rest = url[len(parts.scheme) + 3 + len(parts.netloc) :]
        return (parts.scheme.lower() + "://" + parts.netloc.lower() + rest).rstrip("/")
    return value


def _kind_and_number(placeholder: str) -> tuple[str, int]:
    kind, _, number = placeholder[1:-1].rpartition("_")
    return kind, int(number)


@dataclass(frozen=True)
class Placeholders:
    """A thread's placeholders: `values` maps `<EMAIL_1>` to the value it stands for;
    `counters` holds the highest number given per kind (typed look-alikes included)."""

    values: Mapping[str, str] = field(default_factory=dict)
    counters: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "values", MappingProxyType(dict(self.values)))
        object.__setattr__(self, "counters", MappingProxyType(dict(self.counters)))

    def restore(self, value: T) -> T:
        """`value` with every known placeholder replaced by its real value: a string, or
        parsed JSON (every string in it, keys too). Restore a model's JSON after parsing it:
        a value with a `"` or `\\` would break the JSON text."""
        if isinstance(value, str):
            return self._restore_text(value) if self.values else value
        if isinstance(value, list):
            return [self.restore(each) for each in value]
        if isinstance(value, tuple):
            return tuple(self.restore(each) for each in value)
        if isinstance(value, dict):
            return {self.restore(key): self.restore(each) for key, each in value.items()}
        return value

    def _restore_text(self, text: str) -> str:
        def real_value(match: re.Match) -> str:
            return self.values.get(f"<{match.group(1).upper()}_{int(match.group(2))}>", match.group(0))

        return _LOOKS_LIKE_A_PLACEHOLDER.sub(real_value, text)


class PlaceholderAssignment:
    """Redacts texts against a thread's placeholders, giving new values the next numbers.
    `placeholders` is the result; `changed` says whether it must be stored."""

    def __init__(self, placeholders: Placeholders):
        self._values = dict(placeholders.values)
        self._counters = dict(placeholders.counters)
        self._known: dict[tuple[str, str], str] = {}
        for placeholder, value in self._values.items():
            kind, _ = _kind_and_number(placeholder)
            self._known[(kind, normal_form(kind, value))] = placeholder
        self.changed = False

    @property
    def placeholders(self) -> Placeholders:
        return Placeholders(values=self._values, counters=self._counters)

    def _reserve_look_alikes(self, text: str) -> None:
        for match in _LOOKS_LIKE_A_PLACEHOLDER.finditer(text):
            kind, number = match.group(1).upper(), int(match.group(2))
            if kind in KINDS and f"<{kind}_{number}>" not in self._values and number > self._counters.get(kind, 0):
                self._counters[kind] = number
                self.changed = True

    def _placeholder_for(self, kind: str, value: str) -> str:
        key = (kind, normal_form(kind, value))
        placeholder = self._known.get(key)
        if placeholder is None:
            number = self._counters.get(kind, 0) + 1
            placeholder = f"<{kind}_{number}>"
            self._counters[kind] = number
            self._values[placeholder] = value
            self._known[key] = placeholder
            self.changed = True
        return placeholder

    def redact(self, text: str, findings: Sequence[Finding]) -> str:
        """`text` with each finding replaced by its placeholder."""
        self._reserve_look_alikes(text)
        parts, position = [], 0
        for found in findings:
            parts.append(text[position : found.start])
            parts.append(self._placeholder_for(found.kind, found.value))
            position = found.end
        parts.append(text[position:])
        return "".join(parts)


def findings_of(texts: Sequence[str]) -> list[list[Finding]]:
    """The findings of each text; any failure of the detection is a `RedactionError`."""
    try:
        return [findings_in(text) for text in texts]
    except Exception as error:  # a library's bug must not let a text through unredacted
        raise RedactionError(type(error).__name__) from error
