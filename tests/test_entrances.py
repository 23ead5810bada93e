"""One gate for every entrance (issue 19): every address the service answers — each URL pattern
Django resolves and each WSGI mount beside it (`/mcp`) — is behind authentication, the
key's (or administrator's) rate limit and the 2 MiB body limit, or is on the short list of
public ones below. The addresses come from the resolver and the WSGI application, so a new
entrance is walked without anyone adding it here."""
from __future__ import annotations

import io
import json
import re
import sys

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, resolve
from rest_framework.views import APIView

from core_memory.organisations.models import Organisation
from tests.factories import client_for, make_key

# Public on purpose, by URL name.
PUBLIC = {
    "healthz", "healthz-slash",  # the load balancer's probe: no credential, shows only up/down
    "readyz", "readyz-slash",  # the readiness probe: shows only which services are not ready
    "metrics",  # Prometheus's scrape: a 404 without the operator's CORE_METRICS_TOKEN (tests/test_operations.py)
    "home", "schema-slash", "docs-slash", "redoc-slash",  # redirects to the console and to the documents
    "schema", "docs", "redoc",  # the API's document and its pages: describe the API, show no data
    "admin:login",  # the console's login: before there is a session (its own guessing limit: console middleware)
    "admin:logout",  # ends a session; without one it sends to the login
    "set_language",  # Django's language switch: sets a cookie, shows nothing
}
# Values tried for a path parameter: the first its converter's pattern takes.
SAMPLES = ("x1", "1", "mem_x1", "00000000-0000-0000-0000-000000000001")


def _sample_for(converter) -> str:
    return next(sample for sample in SAMPLES if re.fullmatch(converter.regex, sample))
TOO_LARGE = b"x" * (2 * 1024 * 1024 + 1)


def _sample_of_regex(regex: str) -> str:
    def group(match: re.Match) -> str:
        inside = match.group(1)
        first = inside.split("|")[0]
        return first if re.fullmatch(r"[\w\-]+", first) else "x1"

    path = re.sub(r"\(\?P<\w+>((?:[^()]|\([^()]*\))*)\)", group, regex.lstrip("^").rstrip("$").removesuffix("\\Z"))
    return path.replace("\\", "")


def _sample(pattern) -> str:
    route = getattr(pattern, "_route", None)
    if route is not None:
        converters = pattern.converters
        return re.sub(r"<(?:\w+:)?(\w+)>", lambda match: _sample_for(converters[match.group(1)]), str(route))
    return _sample_of_regex(pattern._regex)


def entrances(resolver=None, prefix: str = "/"):
    """(address, URL pattern) for every pattern the resolver holds, with sample parameters."""
    resolver = resolver or get_resolver()
    for pattern in resolver.url_patterns:
        if isinstance(pattern, URLResolver):
            yield from entrances(pattern, prefix + _sample(pattern.pattern))
        elif isinstance(pattern, URLPattern):
            yield prefix + _sample(pattern.pattern), pattern


def _name(path: str) -> str:
    match = resolve(path)
    return f"{match.namespace}:{match.url_name}" if match.namespace else match.url_name or match.view_name


ENTRANCES = sorted(dict(entrances()).items())


def test_the_walk_finds_every_kind_of_entrance():
    """The walk is not empty by accident: the API, the console and the public pages are in it."""
    names = {_name(path) for path, _ in ENTRANCES}

    assert len(ENTRANCES) > 60
    assert {"memory-list", "person-detail", "admin:index", "admin:login", "healthz"} <= names


@pytest.fixture
def no_requests_left(settings, tenant):
    """Every key and administrator may make 0 requests a minute: the first one is over."""
    settings.CORE_RATE_LIMIT_PER_MINUTE = 0
    Organisation.objects.filter(pk=tenant.organisation.pk).update(rate_limit_per_minute=None)


@pytest.mark.django_db
@pytest.mark.parametrize(("path", "pattern"), ENTRANCES, ids=[path for path, _ in ENTRANCES])
def test_every_entrance_is_public_or_behind_authentication_the_rate_limit_and_the_body_limit(path, pattern, tenant, console, no_requests_left):
    resolved = resolve(path)
    assert resolved.func == pattern.callback, f"the sample address {path} reaches another view"
    name = _name(path)
    too_large = Client().post(path, data=TOO_LARGE, content_type="application/json")
    assert too_large.status_code == 413, f"{path}: a body over 2 MiB was not refused"
    if name in PUBLIC:
        return
    view_class = getattr(pattern.callback, "cls", None)
    if view_class is not None and issubclass(view_class, APIView):
        anonymous = client_for(None).get(path)
        assert anonymous.status_code == 401, f"{path} ({name}) answers without a credential: {anonymous.status_code}"
        limited = client_for(tenant.secret).get(path)
        assert limited.status_code == 429, f"{path} ({name}) is not rate-limited: {limited.status_code}"
        assert_says_where_its_bucket_stands(limited)
    elif name.startswith("admin:"):
        anonymous = Client().get(path)
        assert anonymous.status_code == 302 and anonymous["Location"].startswith("/console/login/"), f"{path} ({name}) answers without a login"
        limited = console.get(path)
        assert limited.status_code == 429, f"{path} ({name}) is not rate-limited for an administrator: {limited.status_code}"
        assert_says_where_its_bucket_stands(limited)
    else:
        pytest.fail(f"{path} ({name}) is an entrance the gate does not know: make it a DRF view, a console page, or list it as public")


def assert_says_where_its_bucket_stands(refused) -> None:
    """Issue 28: every 429 — the API's, the console's, `/mcp`'s — carries `Retry-After` and the
    bucket's `X-RateLimit-*` headers."""
    headers = {name.lower(): value for name, value in refused.items()} if hasattr(refused, "items") else refused
    assert int(headers["retry-after"]) >= 1
    assert headers["x-ratelimit-remaining"] == "0"
    assert {"x-ratelimit-limit", "x-ratelimit-reset"} <= set(headers)


@pytest.fixture
def no_anonymous_requests_left(settings):
    """Every address may make 0 requests a minute without a valid credential."""
    settings.CORE_RATE_LIMIT_ANONYMOUS_PER_MINUTE = 0


@pytest.mark.django_db
@pytest.mark.parametrize(("path", "pattern"), ENTRANCES, ids=[path for path, _ in ENTRANCES])
def test_every_entrance_limits_requests_without_a_valid_credential_per_address(path, pattern, no_anonymous_requests_left):
    """Issue 28: requests with an invalid key were never limited (80 × 401 in a row). Every API
    view — the public document too — and every console page before login takes them from their
    address's bucket; only the load balancer's health probe, the redirects and the language switch
    stay open."""
    name = _name(path)
    view_class = getattr(pattern.callback, "cls", None)
    if view_class is not None and issubclass(view_class, APIView):
        for client in (client_for(None), client_for("core_sk_guessed")):
            refused = client.get(path)
            assert refused.status_code == 429, f"{path} ({name}) does not limit requests without a valid credential: {refused.status_code}"
            assert_says_where_its_bucket_stands(refused)
    elif name.startswith("admin:"):
        refused = Client().get(path)
        assert refused.status_code == 429, f"{path} ({name}) does not limit requests before login: {refused.status_code}"
        assert_says_where_its_bucket_stands(refused)
    else:
        # The health probe, redirects and the language cookie: nothing done, nothing shown.
        assert name in {"healthz", "healthz-slash", "readyz", "readyz-slash", "metrics", "home", "schema-slash", "docs-slash", "redoc-slash", "set_language"}, f"{path} ({name})"


def _mounts(application) -> list[str]:
    """The addresses WSGI mounts answer themselves, outside Django's URLs."""
    prefixes = []
    while hasattr(application, "django_application"):
        prefixes.append(application.prefix)
        application = application.django_application
    return prefixes


def _wsgi_call(application, path: str, *, body: bytes = b"", secret: str | None = None) -> tuple[int, dict, bytes]:
    environ = {
        "REQUEST_METHOD": "POST", "PATH_INFO": path, "SERVER_NAME": "localhost", "SERVER_PORT": "80", "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body), "CONTENT_LENGTH": str(len(body)), "CONTENT_TYPE": "application/json",
        "HTTP_ACCEPT": "application/json, text/event-stream", "wsgi.errors": sys.stderr,
        **({"HTTP_AUTHORIZATION": f"Bearer {secret}"} if secret else {}),
    }
    answer = {}

    def start_response(status, headers, exc_info=None):
        answer["status"], answer["headers"] = int(status.split()[0]), dict(headers)

    content = b"".join(application(environ, start_response))
    return answer["status"], answer["headers"], content


@pytest.mark.django_db(transaction=True)
def test_every_wsgi_mount_is_behind_authentication_the_rate_limit_and_the_body_limit(tenant, no_requests_left):
    """`/mcp` counts against the same limit as the API and refuses the same bodies (issue 19: 30
    MCP calls answered 200 where REST gave 429 after 5, and a 3 MB body was taken)."""
    from core_memory.wsgi import application

    mounts = _mounts(application)
    call = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {}}).encode()
    _, secret = make_key(tenant.organisation, capabilities=["knowledge", "memory"])

    assert mounts == ["/mcp"]
    for prefix in mounts:
        too_large, _, _ = _wsgi_call(application, prefix, body=TOO_LARGE, secret=secret)
        anonymous, _, _ = _wsgi_call(application, prefix, body=call)
        limited, headers, content = _wsgi_call(application, prefix, body=call, secret=secret)

        assert (too_large, anonymous, limited) == (413, 401, 429)
        assert_says_where_its_bucket_stands({name.lower(): value for name, value in headers.items()})
        refusal = json.loads(content)
        assert (refusal["jsonrpc"], refusal["id"], refusal["error"]["data"]["type"]) == ("2.0", 7, "rate_limit_error")


@pytest.mark.django_db(transaction=True)
def test_every_wsgi_mount_limits_requests_without_a_valid_credential_per_address(no_anonymous_requests_left):
    """Issue 28: `/mcp` without a credential, or with a guessed one, is limited per address as the API is."""
    from core_memory.wsgi import application

    call = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {}}).encode()
    for prefix in _mounts(application):
        for secret in (None, "core_sk_guessed"):
            status, headers, content = _wsgi_call(application, prefix, body=call, secret=secret)

            assert status == 429
            assert_says_where_its_bucket_stands({name.lower(): value for name, value in headers.items()})
            assert json.loads(content)["error"]["message"].startswith("Too many requests without a valid credential from this address")
