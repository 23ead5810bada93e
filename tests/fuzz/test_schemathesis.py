"""Fuzzing the API from its own document (issue 11, R-12.3): Schemathesis reads `/v1/schema`
and sends every operation at least FUZZ_EXAMPLES cases (50 by default), valid and invalid,
with every built-in check: no 5xx, status codes, content types, headers and bodies as
documented, invalid data refused, valid data accepted, authentication not ignored.

It runs in-process over WSGI on pytest-django's transaction (tests/fuzz, its own step of
.ci/run: `make test PYTEST_ARGS="-m fuzz"`). Each run draws a new seed (tests/conftest.py, one for all
workers) and prints it at the end, as .ci/run does at the start; `FUZZ_SEED=<n>` sends that run's cases again. Each operation's cases share
one organisation, whose owner key sends them and whose real ids (its index, a record, a thread,
an agent, a second key, its switch's connector) are sent in about half of the valid cases, so
the routes are reached beyond their 404s. The owner key is never the key a case revokes or
narrows, and the organisation's limits are put back after each case that changes them: the run
tests the API, not the 401s and 429s of a key that locked itself out.
"""
from __future__ import annotations

import json
import os
import re
import secrets

import pytest
import schemathesis
from schemathesis.config import SchemathesisConfig
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, assume, seed, settings
from schemathesis.core.parameters import ParameterLocation
from schemathesis.generation.meta import negated_parameters

from core_memory.base.storable import unstorable_value
from core_memory.base.callers import Caller
from core_memory.webhooks.models import WebhookSubscription
from tests.fake_model import FakeChatModel
from tests.fuzz import figures
from tests.fuzz.figures import SENT, STATUSES
from tests.factories import OrganisationFactory, make_index, make_key, resolved_for
from memory.services.writes import RecordDraft

pytestmark = pytest.mark.fuzz

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "50"))


def fuzz_seed(environ) -> int:
    """`FUZZ_SEED` when given (to send a run's cases again), else a new one for every run."""
    given = environ.get("FUZZ_SEED", "").strip()
    return int(given) if given else secrets.randbelow(2**32)


SEED = fuzz_seed(os.environ)

# Valid data may still be refused by a rule the document cannot state (a model not offered, an
# index id that names nothing): that is a 422, which counts as accepting the data's shape.
# Everything else is Schemathesis' default for the check.
CONFIG = SchemathesisConfig.from_dict(
    {"checks": {"positive_data_acceptance": {"expected-statuses": ["2xx", "3xx", "401", "403", "404", "409", "422", "429", "5xx"]}}}
)

@schemathesis.serializer("application/x-ndjson")
def _json_lines(context, value) -> bytes:
    """The import's body: JSON Lines, sent as the text the document describes."""
    return value.encode() if isinstance(value, str) else json.dumps(value).encode()


# Loaded at collection (the document needs no database): from_fixture() is broken on pytest 9.
application = get_wsgi_application()
schema = schemathesis.openapi.from_wsgi("/v1/schema", application, config=CONFIG)
# How many operations the document has: the step fails when fewer were fuzzed (tests/conftest.py).
figures.DOCUMENT_OPERATIONS = sum(1 for _ in schema.get_all_operations())


@pytest.fixture
def keep_test_connection_open(organisation):
    """A raw WSGI call fires Django's request signals, whose `close_old_connections` would close
    the connection inside pytest-django's transaction; Django's test Client disconnects them too
    (and connects them again after each of its requests: hence after `organisation`'s)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def fuzz_organisation(model_id: str) -> tuple[str, dict]:
    """An organisation with one of everything the routes address: the owner key's secret, and
    the real ids by parameter name. `key_id` is a second key: a case that revokes or narrows
    the key it names never touches the one that sends the cases."""
    from memory.services.writes import record_write

    organisation = OrganisationFactory()
    key, secret = make_key(organisation, name="owner")
    other_key, _ = make_key(organisation, name="fuzzed")
    index = resolved_for(key, make_index(organisation))
    record = record_write(caller=Caller(key=key, subject=None, actor="fuzz"), index=index, draft=RecordDraft(type="fact", text="Kantoor sluit om vijf")).record
    from tests.factories import client_for

    client = client_for(secret)
    thread = client.post("/v1/threads", {}, format="json").json()
    agent = client.post("/v1/agents", {"name": "desk", "model": model_id}, format="json").json()
    switch = client.put(f"/v1/memory/stores/{index.id}/extraction", {"enabled": True, "model": model_id}, format="json").json()
    webhook = WebhookSubscription.objects.create(
        organisation=organisation, url="https://hooks.example/core", events=["record.created"], secret="whsec_" + "A" * 44
    )
    return secret, {
        "organisation_id": organisation.id,
        "index_id": index.id,
        "record_id": record.id,
        "thread_id": thread["id"],
        "agent_id": agent["id"],
        "key_id": other_key.id,
        "connector_id": switch["connector_id"],
        "webhook_id": webhook.id,
        "subject": "anna",
    }


@pytest.fixture
def organisation(db, settings):
    model = FakeChatModel().start()
    settings.CORE_MODELS = [model.config("fake-chat")]
    yield fuzz_organisation("fake-chat")
    model.stop()


# The organisation's settings that limit what its keys may do: a case that changes them is
# followed by putting them back, so that later cases are not refused by what an earlier one set.
LIMITING_SETTINGS = ("capabilities", "offered_models", "helper_model", "monthly_token_limit", "rate_limit_per_minute")


def _limits_put_back(organisation_id: str, before: dict) -> None:
    from core_memory.base.callers import Caller
    from core_memory.organisations.models import Organisation
    from core_memory.organisations.services import organisation_update

    organisation = Organisation.objects.get(pk=organisation_id)
    changed = {name: value for name, value in before.items() if getattr(organisation, name) != value}
    if changed:
        organisation_update(caller=Caller.system(organisation_id=organisation.id, actor="fuzz"), organisation=organisation, changes=changed)


def _limits_of(organisation_id: str) -> dict:
    from core_memory.organisations.models import Organisation

    return Organisation.objects.filter(pk=organisation_id).values(*LIMITING_SETTINGS).get()


def _with_real_handles(case, real: dict) -> None:
    """Ids and cursors are handles only the server issues: a valid case cannot make one up. About
    half of the valid cases address the organisation's real objects, and a made-up cursor in a
    valid case asks for the first page instead."""
    if case.meta is None or getattr(case.meta.generation.mode, "name", "") != "POSITIVE":
        return
    if case.query and "cursor" in case.query:
        case.query["cursor"] = ""
    if not case.path_parameters or hash(repr(case.body)) % 2:
        return
    for name in case.path_parameters:
        if name in real:
            case.path_parameters[name] = real[name]


# Times of the years 1 and 9999 lie outside what every zone can read back (core_memory.base.storable).
_EDGE_TIME = re.compile(r"^(0001-01-01|9999-12-31)")


def _unstorable(case) -> bool:
    """Text PostgreSQL cannot store (NUL, a lone surrogate) and times at the edges of the years
    it can hand back are refused by rules the document states once for the whole API, not on
    every string: a valid case does not carry them."""
    parts = [part for part in (case.body, case.query, case.headers, case.path_parameters) if part]
    if any(unstorable_value(part) for part in parts):
        return True
    pending = list(parts)
    while pending:
        item = pending.pop()
        if isinstance(item, str) and _EDGE_TIME.match(item):
            return True
        if isinstance(item, dict):
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


# Operations whose valid data may still meet a 400 for a rule OpenAPI 3.0 cannot state (a field
# required only when another has a value, names of a map's keys); every other check runs on them.
CONDITIONAL_RULES = {
    "POST /v1/agents": "memory_injection.index_id is required when memory_injection.enabled is true",
    "POST /v1/agents/{agent_id}/versions": "memory_injection.index_id is required when memory_injection.enabled is true",
    "POST /v1/tenants/{organisation_id}/keys": "memory.decay.half_life_days keys are type names; injection.index_id when enabled",
    "PATCH /v1/tenants/{organisation_id}/keys/{key_id}": "memory.decay.half_life_days keys are type names; injection.index_id when enabled",
    "PATCH /v1/memory/{record_id}": "due_at and done only for a commitment (the record's type)",
    "POST /v1/memory": "due_at only for a commitment; expires_at lies in the future",
    "GET /v1/memory": "as_of does not lie in the future",
    "GET /v1/memory/{record_id}": "as_of does not lie in the future",
    "POST /v1/memory/search": "as_of does not lie in the future",
    # An address is resolved and must be public (unless the operator allows private networks).
    "POST /v1/webhooks": "url must resolve to a public address that is not Core itself",
    "PATCH /v1/webhooks/{webhook_id}": "url must resolve to a public address that is not Core itself",
    "PUT /v1/memory/stores/{index_id}/extraction": "model is required when enabled is true; lessons need episodes",
    # OpenAPI 3.0 has no `propertyNames`: a label's name (1 to 100 characters) is said in words only.
    "PATCH /v1/memory/stores/{index_id}": "promotion.labels names are 1 to 100 characters; expiry.lifetime_days keys 1 to 40",
    "POST /v1/responses": "model is required unless agent names one",
    "POST /v1/memory/import": "the JSON Lines body is required (the document marks a raw body optional)",
    # OpenAI's message and input item shapes are read by the wire layer, not stated item by item.
    "POST /openai/v1/chat/completions": "messages are OpenAI's shapes (a tool message answers an earlier call); a system message alone is no conversation",
    "POST /openai/v1/responses": "input items are OpenAI's shapes (a function_call_output answers an earlier call)",
}




def _authorization(case, secret: str) -> dict:
    """The owner key's header, unless the case is invalid for its Authorization header (removed
    or changed): sending the key then would turn the invalid request into a valid one, which the
    API rightly accepts and Schemathesis would count as invalid data accepted."""
    meta = case.meta
    if meta is not None and meta.is_negative_at(ParameterLocation.HEADER):
        negated = {name.lower() for name, location in negated_parameters(meta) if location == ParameterLocation.HEADER}
        sent = {name.lower() for name in (case.headers or {})}
        if "authorization" in negated or "authorization" not in sent:
            return {}
    return {"Authorization": f"Bearer {secret}"}


@schema.parametrize()
@seed(SEED)
@settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
def test_api(case, organisation, keep_test_connection_open):
    secret, real = organisation
    positive = case.meta is not None and getattr(case.meta.generation.mode, "name", "") == "POSITIVE"
    assume(not (positive and _unstorable(case)))
    _with_real_handles(case, real)
    excluded = [schemathesis.checks.positive_data_acceptance] if case.operation.label in CONDITIONAL_RULES else []
    SENT[case.operation.label] += 1
    limits = _limits_of(real["organisation_id"])
    try:
        response = case.call_and_validate(headers=_authorization(case, secret), excluded_checks=excluded)
    finally:
        _limits_put_back(real["organisation_id"], limits)
    # Counted once every check passed (a failing case fails the step anyway).
    STATUSES[f"{response.status_code // 100}xx"] += 1

