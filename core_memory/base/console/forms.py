"""Settings as forms: a configuration's DRF serializer — the one the API
validates with — turned into plain form fields, one per setting, with its label, help text,
limits and default shown; JSON only where the shape is free (metadata, labels).

A nested setting `injection.rank` becomes the form field `injection__rank`. `settings_data`
gathers the fields back into the nested shape; the caller validates that with the same
serializer, so the console and the API accept exactly the same settings, and maps an error
path back to its field with `field_name_of`.
"""
from __future__ import annotations

import json
from collections.abc import Callable

from django import forms
from django.utils.functional import lazy
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _
from rest_framework import serializers

from core_memory.base.validation import serializer_defaults

# What a setting's fixed values are called in a form (the API's values stay the stored ones).
CHOICE_LABELS = {
    "confidence": _("by confidence"),
    "relevance": _("by relevance to the turn"),
    "blend": _("both, blended"),
    "with_person": _("conversations with a person"),
    "all": _("every conversation"),
}
SEPARATOR = "__"
OTHER_TYPES = "other_types"  # a per-type map's entry for the types without a field of their own


def field_name_of(path: str) -> str:
    """`injection.rank` → `injection__rank`."""
    return path.replace(".", SEPARATOR)


def _shown(value, labels: dict) -> str:
    """A default as people read it, in the language of the page that shows it: fixed values and
    record types by their labels, never the identifiers the API stores."""
    if value is None:
        return str(_("none"))
    if isinstance(value, bool):
        return str(_("on") if value else _("off"))
    if isinstance(value, str):
        return str(labels.get(value, value))
    if isinstance(value, list):
        return ", ".join(_shown(each, labels) for each in value) if value else str(_("empty"))
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False) if value else str(_("empty"))
    return str(value)


# Evaluated when the page renders, so an English page never shows the default in Dutch (the
# fields may be built while another language is active).
_shown_lazily = lazy(_shown, str)


def _with_default(help_text, default, labels: dict):
    default_text = format_lazy("{} {}.", _("Default:"), _shown_lazily(default, labels))
    return format_lazy("{} {}", help_text, default_text) if help_text else default_text


def _limits(field) -> dict:
    return {
        name: getattr(field, source)
        for name, source in (("min_value", "min_value"), ("max_value", "max_value"))
        if getattr(field, source, None) is not None
    }


class SettingsFields:
    """The form fields of one serializer under `prefix`, and the way back to its data.

    `texts` maps a setting's path (without the prefix) to (label, help text). `choices`
    maps a path to the choices a free string setting is picked from (an index id). `type_labels`
    names the record types a per-type map (type to number) shows a field for each of."""

    def __init__(
        self, serializer_class, *, prefix: str, texts: dict, choices: Callable[[str], list] | None = None, type_labels: dict | None = None
    ):
        self.serializer_class = serializer_class
        self.prefix = prefix
        self.texts = texts
        self.choices = choices or (lambda path: None)
        self.defaults = serializer_defaults(serializer_class)
        self.per_type_maps: set[str] = set()
        self.type_labels = type_labels or {}

    def fields(self) -> dict[str, forms.Field]:
        return dict(self._fields(self.serializer_class(), path="", defaults=self.defaults))

    def _text(self, path: str):
        return self.texts.get(path, (path.rsplit(".", 1)[-1].replace("_", " "), ""))

    def _fields(self, serializer, *, path: str, defaults: dict):
        for name, field in serializer.fields.items():
            setting = f"{path}{name}"
            default = defaults.get(name)
            if isinstance(field, serializers.Serializer):
                yield from self._fields(field, path=f"{setting}.", defaults=default or {})
                continue
            label, help_text = self._text(setting)
            form_name = field_name_of(f"{self.prefix}.{setting}")
            if isinstance(field, serializers.DictField) and isinstance(field.child, serializers.FloatField):
                self.per_type_maps.add(setting)
                for type_name, type_text in self.type_labels.items():
                    yield f"{form_name}{SEPARATOR}{type_name}", forms.FloatField(
                        label=format_lazy("{}: {}", label, type_text), required=False, help_text=help_text, **_limits(field.child)
                    )
                yield f"{form_name}{SEPARATOR}{OTHER_TYPES}", forms.JSONField(
                    label=format_lazy("{}: {}", label, _("other types")),
                    required=False,
                    help_text=_('A JSON object of type to number, e.g. {"invoice": 30}.'),
                )
                continue
            yield form_name, self._field(field, setting=setting, label=label, help_text=_with_default(help_text, default, {**CHOICE_LABELS, **self.type_labels}))

    def _field(self, field, *, setting: str, label, help_text) -> forms.Field:
        common = {"label": label, "help_text": help_text, "required": False}
        choices = self.choices(setting)
        if choices is not None and isinstance(field, serializers.ListField):
            # Picked by name (keys, agents), never typed in as ids; the page fills in the choices.
            return forms.MultipleChoiceField(choices=choices, widget=forms.CheckboxSelectMultiple, **common)
        if choices is not None:
            return forms.ChoiceField(choices=[("", "—"), *choices], **common)
        if isinstance(field, serializers.BooleanField):
            return forms.BooleanField(**common)
        if isinstance(field, serializers.IntegerField):
            return forms.IntegerField(**common, **_limits(field))
        if isinstance(field, serializers.FloatField):
            return forms.FloatField(**common, **_limits(field))
        if isinstance(field, serializers.ChoiceField):
            return forms.ChoiceField(choices=[(value, CHOICE_LABELS.get(value, label)) for value, label in field.choices.items()], **common)
        if isinstance(field, serializers.ListField):
            return forms.CharField(**{**common, "help_text": format_lazy("{} {}", _("Comma-separated."), help_text)})
        if isinstance(field, serializers.DictField):
            return forms.JSONField(**common)
        return forms.CharField(**common)

    def field_for(self, path: str | None) -> str | None:
        """The form field an error at `path` (the serializer's, without the prefix) belongs on; None: the form's."""
        if not path:
            return None
        names = self.fields()
        direct = field_name_of(f"{self.prefix}.{path}")
        if direct in names:
            return direct
        for setting in self.per_type_maps:
            if path.startswith(f"{setting}."):
                type_name = path.removeprefix(f"{setting}.").split(".")[0]
                own = field_name_of(f"{self.prefix}.{setting}.{type_name}")
                return own if own in names else field_name_of(f"{self.prefix}.{setting}.{OTHER_TYPES}")
        return None

    # --- from stored settings to the form, and back ----------------------------------------------
    def initial(self, data: dict) -> dict:
        """Form values for stored (complete) settings (the serializer's shape, without the prefix)."""
        values = {}
        for form_name, field in self.fields().items():
            path = form_name.removeprefix(field_name_of(self.prefix) + SEPARATOR).split(SEPARATOR)
            if path[-1] in (*self.type_labels, OTHER_TYPES) and ".".join(path[:-1]) in self.per_type_maps:
                mapping = _dig(data, path[:-1]) or {}
                if path[-1] == OTHER_TYPES:
                    values[form_name] = {name: days for name, days in mapping.items() if name not in self.type_labels}
                else:
                    values[form_name] = mapping.get(path[-1])
                continue
            value = _dig(data, path)
            if isinstance(field, forms.CharField) and not isinstance(field, forms.MultipleChoiceField) and isinstance(value, list):
                value = ", ".join(value)
            values[form_name] = "" if value is None and isinstance(field, forms.ChoiceField) else value
        return values

    def data(self, cleaned: dict) -> dict:
        """The nested settings (the serializer's shape, without the prefix) the form's cleaned values
        make; a value left empty means the default."""
        data: dict = {}
        for form_name, field in self.fields().items():
            if form_name not in cleaned:
                continue
            path = form_name.removeprefix(field_name_of(self.prefix) + SEPARATOR).split(SEPARATOR)
            value = cleaned[form_name]
            if path[-1] in (*self.type_labels, OTHER_TYPES) and ".".join(path[:-1]) in self.per_type_maps:
                mapping = _dig(data, path[:-1], create=True)
                if path[-1] == OTHER_TYPES:
                    mapping.update(value or {})
                elif value is not None:
                    mapping[path[-1]] = value
                continue
            if isinstance(field, forms.BooleanField):
                _put(data, path, bool(value))
            elif isinstance(field, forms.MultipleChoiceField):
                _put(data, path, list(value or []))
            elif isinstance(field, forms.CharField) and not isinstance(field, forms.ChoiceField) and self._is_list(path):
                _put(data, path, [part.strip() for part in (value or "").split(",") if part.strip()])
            elif value in (None, ""):
                default = _dig(self.defaults, path)
                if default is None:
                    _put(data, path, None)
                # otherwise left out: the serializer fills the default
            else:
                _put(data, path, value)
        return data

    def _is_list(self, path: list[str]) -> bool:
        field = self.serializer_class()
        for name in path:
            field = field.fields[name] if isinstance(field, serializers.Serializer) else None
            if field is None:
                return False
        return isinstance(field, serializers.ListField)


def _dig(data, path: list[str], *, create: bool = False):
    for name in path:
        if not isinstance(data, dict):
            return None
        if create:
            data = data.setdefault(name, {})
        else:
            data = data.get(name)
    return data


def _put(data: dict, path: list[str], value) -> None:
    for name in path[:-1]:
        data = data.setdefault(name, {})
    data[path[-1]] = value
