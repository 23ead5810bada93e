"""Bearer authentication with a key secret or a subject token.

One query per request reads the credential's key and organisation, only when usable now
(not revoked, not expired, the token not erased), together with the organisation's
configuration version (docs/decisions.md "Caches"). Nothing about the credential is kept
between requests, so revoking, expiring, deleting or changing a key takes effect at once;
the version stamped on the key lets what may be kept (an index and its store) be used
again only while nothing of the organisation's configuration has changed.
"""
from __future__ import annotations

from django.db import connection
from django.db.models import Model
from django.utils import timezone
from rest_framework import authentication, exceptions

from core_memory.base.api.throttling import anonymous_rate_limit_take
from core_memory.base.callers import Caller
from core_memory.base.telemetry.context import organisation_set
from core_memory.keys.models import KEY_SECRET_PREFIX, SUBJECT_TOKEN_PREFIX, ApiKey, SubjectToken, secret_hash
from core_memory.organisations.models import Organisation

# Credentials remembered per process; past this many the memory starts again.
CACHE_SIZE = 4096


class KeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            _anonymous_limit(request)
            return None
        parts = header.split()
        if len(parts) != 2 or parts[0].lower() != "bearer":
            _anonymous_limit(request)
            raise exceptions.AuthenticationFailed("Use 'Authorization: Bearer <secret>'.")
        secret = parts[1]
        caller = caller_for_secret(secret)
        if caller is None:
            _anonymous_limit(request)
            raise exceptions.AuthenticationFailed("Unknown, revoked or expired credential.")
        organisation_set(caller.organisation_id)
        return caller, caller.key

    def authenticate_header(self, request) -> str:
        return 'Bearer realm="core"'


class AnonymousThrottled(exceptions.Throttled):
    """A 429 for requests without a valid credential from one address."""

    scope = "address"


def _anonymous_limit(request) -> None:
    """A request without a valid credential takes from its address's bucket; over it, a 429 (with
    the bucket's headers, core_memory.base.api.exceptions) instead of the 401."""
    state = anonymous_rate_limit_take(address=request.META.get("REMOTE_ADDR") or "unknown")
    if state is not None and state.wait is not None:
        request.rate_limit_state = state
        raise AnonymousThrottled(wait=state.wait)


def _columns(model: type[Model], alias: str) -> str:
    return ", ".join(f"{alias}.{field.column}" for field in model._meta.concrete_fields)


_KEY_FIELDS = ApiKey._meta.concrete_fields
_ORGANISATION_FIELDS = Organisation._meta.concrete_fields
_SELECTED = f"{_columns(ApiKey, 'api_key')}, {_columns(Organisation, 'organisation')}, organisation.config_version"
_KEY_USABLE = f"""
    SELECT {_SELECTED}, NULL
    FROM {ApiKey._meta.db_table} api_key
    JOIN {Organisation._meta.db_table} organisation ON organisation.id = api_key.organisation_id
    WHERE api_key.secret_hash = %s AND api_key.revoked_at IS NULL AND (api_key.expires_at IS NULL OR api_key.expires_at > %s)
"""
_TOKEN_USABLE = f"""
    SELECT {_SELECTED}, token.subject
    FROM {SubjectToken._meta.db_table} token
    JOIN {ApiKey._meta.db_table} api_key ON api_key.id = token.key_id
    JOIN {Organisation._meta.db_table} organisation ON organisation.id = api_key.organisation_id
    WHERE token.secret_hash = %s AND token.expires_at > %s
      AND api_key.revoked_at IS NULL AND (api_key.expires_at IS NULL OR api_key.expires_at > %s)
"""


def caller_for_secret(secret: str) -> Caller | None:
    """The caller behind a secret (for its person, when a subject token), or None when it is
    unknown, revoked, expired or erased.

    The secret names the organisation: no scope to read it within. Raw SQL, as this runs
    before every request: the ORM would spend more building the query than the database
    spends answering it."""
    if secret.startswith(KEY_SECRET_PREFIX):
        sql, is_token = _KEY_USABLE, False
    elif secret.startswith(SUBJECT_TOKEN_PREFIX):
        sql, is_token = _TOKEN_USABLE, True
    else:
        return None
    hashed = secret_hash(secret)
    now = timezone.now()
    with connection.cursor() as cursor:
        cursor.execute(sql, [hashed, now, now] if is_token else [hashed, now])
        row = cursor.fetchone()
    if row is None:
        return None
    key = _instance(ApiKey, _KEY_FIELDS, row[: len(_KEY_FIELDS)])
    key.organisation = _instance(Organisation, _ORGANISATION_FIELDS, row[len(_KEY_FIELDS) : -2])
    key.config_version = row[-2]
    return Caller(key=key, subject=row[-1], by_subject_token=row[-1] is not None)


def _instance(model: type[Model], fields, values) -> Model:
    """A model instance from its columns' values, as the ORM makes one from a row."""
    converted = [
        field.from_db_value(value, None, connection) if hasattr(field, "from_db_value") else value
        for field, value in zip(fields, values, strict=True)
    ]
    return model.from_db(connection.alias, [field.attname for field in fields], converted)
