"""Background model calls with a fixed answer shape.

Every background call — an extraction window, a store lesson, a contradiction or
promotion analysis — sends `response_format`
`{"type": "json_schema", "json_schema": {"name", "schema", "strict": true}}` and reads
`choices[0].message.content` as JSON. An answer that is not a JSON object is an
`InvalidModelOutput`; so is one of the wrong shape, which each caller finds with the
readers below while it turns the answer into its own values. Either way the caller fails
its unit of work with `invalid_model_output` and writes nothing of it.

`strict_object` builds schemas that OpenAI's strict mode accepts (every property listed
as required, no others allowed; optional values are nullable instead). The readers are
lenient where strictness buys nothing: a property left out reads as null, unknown
properties are ignored, so a model that answers the shape of the documented examples is read.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from core_memory.base.storable import UNSTORABLE_CHARACTERS
from core_memory.llm.protocol import ProviderError, TokenCount
from core_memory.llm.providers import chat_completion
from core_memory.organisations.models import Organisation

INVALID_MODEL_OUTPUT = "invalid_model_output"


class InvalidModelOutput(ProviderError):
    """The model answered, but not JSON of the asked shape. `usage` is what the call
    cost: it was metered all the same."""

    def __init__(self, message: str, *, usage: TokenCount | None = None):
        super().__init__(INVALID_MODEL_OUTPUT, message)
        self.usage = usage or TokenCount()


class UnusableAnswer(Exception):
    """A structured call gave nothing its caller can use: `code` is `invalid_model_output` (an
    answer of the wrong shape) or `model_error` (no answer), `usage` what the call cost. Durable
    work fails its unit with these."""

    def __init__(self, code: str, message: str, *, usage: TokenCount | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.usage = usage


@dataclass(frozen=True)
class StructuredAnswer:
    data: dict
    usage: TokenCount


def json_schema_format(*, name: str, schema: dict) -> dict:
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}


def strict_object(properties: Mapping[str, dict]) -> dict:
    """An object schema for strict mode: every property required, nothing else allowed."""
    return {"type": "object", "properties": dict(properties), "required": list(properties), "additionalProperties": False}


def nullable(schema: dict) -> dict:
    """`schema`, or null: how strict mode says "optional"."""
    kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    widened = {**schema, "type": [*kinds, "null"]}
    if "enum" in schema:
        widened["enum"] = [*schema["enum"], None]
    return widened


def structured_completion(
    *,
    organisation: Organisation,
    model: Mapping | str,
    name: str,
    schema: dict,
    messages: list[dict],
    now: datetime | None = None,
) -> StructuredAnswer:
    """One metered call whose answer must be a JSON object. Raises `ProviderError`
    when no answer came, `InvalidModelOutput` when it is not a JSON object. Call it outside
    any database transaction: a slow model must hold no locks."""
    answer = chat_completion(
        organisation=organisation,
        model=model,
        messages=messages,
        response_format=json_schema_format(name=name, schema=schema),
        now=now,
    )
    if answer.tool_calls or not isinstance(answer.content, str):
        raise InvalidModelOutput("The model answered without JSON content.", usage=answer.usage)
    try:
        data = json.loads(answer.content)
    except (ValueError, RecursionError):
        raise InvalidModelOutput("The model's content is not JSON.", usage=answer.usage) from None
    if not isinstance(data, dict):
        raise InvalidModelOutput("The model's content is not a JSON object.", usage=answer.usage)
    return StructuredAnswer(data=data, usage=answer.usage)


# Readers of an answer's values: each returns the value or raises InvalidModelOutput naming
# the value's path (`records[2].text`), which the caller logs; nothing of it is written.

_KINDS = {
    "string": (str,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


def answer_value(container: Mapping, name: str, kind: str, *, path: str, required: bool = True, choices=None):
    """`container[name]` of JSON kind `kind`; absent or null is None unless `required`.
    Strings must be storable (no NUL, no lone surrogate) and, with `choices`, one of them."""
    here = f"{path}.{name}" if path else name
    value = container.get(name)
    if value is None:
        if required:
            raise InvalidModelOutput(f"{here} is missing.")
        return None
    allowed = _KINDS[kind]
    if not isinstance(value, allowed) or (kind in ("number", "integer") and isinstance(value, bool)):
        raise InvalidModelOutput(f"{here} is not a {kind}.")
    if kind == "string" and UNSTORABLE_CHARACTERS.search(value):
        raise InvalidModelOutput(f"{here} holds characters that cannot be stored.")
    if choices is not None and value not in choices:
        raise InvalidModelOutput(f"{here} is not one of {', '.join(choices)}.")
    return value


def answer_objects(container: Mapping, name: str, *, path: str = "", required: bool = True) -> list[tuple[str, dict]]:
    """The objects of the list `container[name]`, each with its path."""
    here = f"{path}.{name}" if path else name
    values = answer_value(container, name, "array", path=path, required=required) or []
    objects = []
    for position, value in enumerate(values):
        if not isinstance(value, dict):
            raise InvalidModelOutput(f"{here}[{position}] is not an object.")
        objects.append((f"{here}[{position}]", value))
    return objects


def answer_strings(container: Mapping, name: str, *, path: str) -> list[str]:
    """The list of strings `container[name]`; absent or null is an empty list."""
    here = f"{path}.{name}" if path else name
    values = answer_value(container, name, "array", path=path, required=False) or []
    for position, value in enumerate(values):
        if not isinstance(value, str) or UNSTORABLE_CHARACTERS.search(value):
            raise InvalidModelOutput(f"{here}[{position}] is not a string.")
    return list(values)


def structured_answer_read(*, complete: Callable[..., StructuredAnswer], read: Callable[[dict], Any], placeholders, **request):
    """A unit of durable work asks: `complete(**request)` (the caller's `structured_completion`),
    its answer restored with `placeholders` and turned into the unit's values by `read`, and the
    call's usage. A failed call or an answer of the wrong shape is an `UnusableAnswer`, counting
    the tokens the call cost, before anything is written."""
    try:
        answer = complete(**request)
    except InvalidModelOutput as error:
        raise UnusableAnswer(INVALID_MODEL_OUTPUT, error.message, usage=error.usage) from error
    except ProviderError as error:
        raise UnusableAnswer("model_error", f"{error.code}: {error.message}") from error
    try:
        return read(placeholders.restore(answer.data)), answer.usage
    except InvalidModelOutput as error:
        raise UnusableAnswer(INVALID_MODEL_OUTPUT, error.message, usage=answer.usage) from error
