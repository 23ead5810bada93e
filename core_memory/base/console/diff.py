"""Highlighted differences between two versions of a value, for the console's history pages."""
from __future__ import annotations

import difflib
import json
import re

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

_TOKENS = re.compile(r"\s+|[^\s]+")


def text_diff(old: str | None, new: str) -> SafeString:
    """`new` with the words taken out of `old` struck through and the words put in marked,
    escaped; the plain (escaped) text when there is no older version or nothing changed."""
    if old is None or old == new:
        return format_html("{}", new)
    before, after = _TOKENS.findall(old), _TOKENS.findall(new)
    parts = []
    for operation, old_from, old_to, new_from, new_to in difflib.SequenceMatcher(a=before, b=after, autojunk=False).get_opcodes():
        if operation in ("replace", "delete"):
            parts.append(format_html('<del class="diff">{}</del>', "".join(before[old_from:old_to])))
        if operation in ("replace", "insert"):
            parts.append(format_html('<ins class="diff">{}</ins>', "".join(after[new_from:new_to])))
        if operation == "equal":
            parts.append(format_html("{}", "".join(after[new_from:new_to])))
    return mark_safe("".join(parts))  # noqa: S308 — every part above is escaped by format_html


def value_diff(old, new, *, shown=str) -> SafeString:
    """`old → new`, both highlighted, when the value changed; else the value as `shown` renders it."""
    if old is None or old == new:
        return format_html("{}", shown(new))
    return format_html('<del class="diff">{}</del> → <ins class="diff">{}</ins>', shown(old), shown(new))


def _json(value) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def mapping_diff(old: dict | None, new: dict) -> SafeString:
    """A JSON object's keys, each added, removed or changed key highlighted."""
    if old is None or old == new:
        return format_html("{}", _json(new))
    lines = []
    for name in sorted(set(old) | set(new)):
        if name not in new:
            lines.append(format_html('<del class="diff">{}: {}</del>', name, _json(old[name])))
        elif name not in old:
            lines.append(format_html('<ins class="diff">{}: {}</ins>', name, _json(new[name])))
        elif old[name] != new[name]:
            lines.append(format_html('{}: <del class="diff">{}</del> → <ins class="diff">{}</ins>', name, _json(old[name]), _json(new[name])))
        else:
            lines.append(format_html("{}: {}", name, _json(new[name])))
    return format_html_join(mark_safe("<br>"), "{}", ((line,) for line in lines))
