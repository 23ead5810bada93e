"""The console's protections: security headers on every console page, rate limits, and a login
that slows down guessing without locking the rightful user out.

Every console request is counted: an administrator's against her organisation's rate limit, a
request before login against its address's limit for requests without a credential (as on the
API; the address is the client's behind the operator's load balancers, CORE_TRUSTED_PROXIES).
Over either, a 429 with `Retry-After` and the bucket's `X-RateLimit-*` headers.

The login: after `LOGIN_FAILURES_PER_NAME` failed logins for one name from one address (or
`LOGIN_FAILURES_PER_ADDRESS` for any names) within `LOGIN_WINDOW_SECONDS`, each further failure
holds that name and address (or that address) for a delay that doubles — 1, 2, 4 … seconds, at
most `LOGIN_LONGEST_DELAY_SECONDS`; while held, the login answers 429 without checking the
password. A browser an administrator has logged in with carries a signed device cookie for her
name: from it, only that device's own failures count, so failures that are not hers — an
attacker guessing her name, or any names, from the same office or the same balancer — never hold
her there. The failures are counted where the API's rate limits are (Redis, shared by every
process; core_memory.base.api.throttling)."""
from __future__ import annotations

import logging
import math
import secrets
import zoneinfo

from django.conf import settings
from django.core import signing
from django.http import HttpResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _

from core_memory.base.api.throttling import (
    anonymous_rate_limit_take,
    attempts_count,
    console_rate_limit_take,
    held_for,
    hold_set,
    rate_limit_headers,
)
from core_memory.base.callers import Caller
from core_memory.base.console.selectors import administered_organisation_id, console_actor
from core_memory.console.selectors import administrator_rate_limit, organisation_zone

logger = logging.getLogger(__name__)

LOGIN_FAILURES_PER_NAME = 5
LOGIN_FAILURES_PER_ADDRESS = 30
# Failures are remembered this long, so the delay keeps growing over an attacker's hour.
LOGIN_WINDOW_SECONDS = 60 * 60
LOGIN_LONGEST_DELAY_SECONDS = 5 * 60
# The browser an administrator logged in with, signed for her name; kept a year.
DEVICE_COOKIE = "core_console_device"
DEVICE_COOKIE_SALT = "core.console.device"
DEVICE_COOKIE_SECONDS = 365 * 24 * 3600
# The admin's own templates and ours load scripts and styles from our static files only.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'; "
    "object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
)


def _client_address(request) -> str:
    # The client's address, also behind trusted proxies (core_memory.api.middleware.ClientAddressMiddleware).
    return request.META.get("REMOTE_ADDR") or "unknown"


def _login_name(request) -> str:
    return (request.POST.get("username") or "").strip().casefold()[:150]


def _known_device(request, username: str) -> str | None:
    """The id of this browser when an administrator of `username` logged in with it, else None."""
    try:
        device = signing.loads(request.COOKIES.get(DEVICE_COOKIE, ""), salt=DEVICE_COOKIE_SALT, max_age=DEVICE_COOKIE_SECONDS)
    except signing.BadSignature:
        return None
    if not isinstance(device, dict) or device.get("user") != username or not username:
        return None
    return device.get("device")


def _refused(message: str, headers: dict[str, str]) -> HttpResponse:
    response = HttpResponse(message, status=429, content_type="text/plain; charset=utf-8")
    for name, value in headers.items():
        response[name] = value
    return response


class ConsoleProtectionMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not request.path_info.startswith("/console/"):
            return self.get_response(request)
        refused = self._over_the_rate_limit(request)
        if refused is not None:
            return self._protected(refused)
        is_login = request.method == "POST" and request.path_info == reverse("admin:login")
        attempts = self._attempts(request) if is_login else []
        held = max((held_for(name=name) for name, _limit in attempts), default=0)
        if held > 0:
            logger.warning("console.login.throttled", extra={"address": _client_address(request)})
            seconds = max(1, math.ceil(held))
            headers = {
                "Retry-After": str(seconds), "X-RateLimit-Limit": str(attempts[0][1]), "X-RateLimit-Remaining": "0",
                "X-RateLimit-Reset": str(seconds),
            }
            return self._protected(_refused(_("Too many failed logins. Try again later."), headers))
        response = self.get_response(request)
        if is_login and response.status_code == 200:
            # The login form shown again: the name or password was wrong.
            for name, limit in attempts:
                count, _window_ends = attempts_count(name=name, seconds=LOGIN_WINDOW_SECONDS, add=True)
                if count >= limit:
                    hold_set(name=name, seconds=min(2 ** (count - limit), LOGIN_LONGEST_DELAY_SECONDS))
        elif is_login and getattr(request, "user", None) is not None and request.user.is_authenticated:
            self._remember_device(request, response)
        return self._protected(response)

    @staticmethod
    def _over_the_rate_limit(request) -> HttpResponse | None:
        """An administrator is held to her organisation's rate limit (the console is an entrance
        like the API); a request before login to its address's limit for requests without a credential."""
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            state = console_rate_limit_take(user, organisation_limit=administrator_rate_limit(user=user))
        else:
            state = anonymous_rate_limit_take(address=_client_address(request))
        if state is None or state.wait is None:
            return None
        return _refused(_("Too many requests. Try again later."), rate_limit_headers(state))

    @staticmethod
    def _attempts(request) -> list[tuple[str, int]]:
        """The counts a login's failure adds to, each with its limit: the device's own when the
        browser is hers, else the name's at this address and the address's."""
        username = _login_name(request)
        device = _known_device(request, username)
        if device is not None:
            return [(f"console-login:device:{device}", LOGIN_FAILURES_PER_NAME)]
        address = _client_address(request)
        return [(f"console-login:{address}:{username}", LOGIN_FAILURES_PER_NAME), (f"console-login:{address}", LOGIN_FAILURES_PER_ADDRESS)]

    @staticmethod
    def _remember_device(request, response) -> None:
        username = request.user.get_username().casefold()
        device = _known_device(request, username) or secrets.token_hex(16)
        value = signing.dumps({"user": username, "device": device}, salt=DEVICE_COOKIE_SALT)
        response.set_cookie(
            DEVICE_COOKIE, value, max_age=DEVICE_COOKIE_SECONDS, path="/console/", httponly=True, samesite="Lax",
            secure=settings.CORE_HTTPS,
        )

    @staticmethod
    def _protected(response):
        response.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        response.setdefault("Cache-Control", "no-store")
        response.setdefault("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
        return response


class ConsoleTimezoneMiddleware:
    """Console pages show times in the administrator's organisation's time zone (with the zone in
    every format, core_memory.formats); a superuser, who sees every organisation, reads UTC."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not request.path_info.startswith("/console/") or not getattr(request, "user", None) or not request.user.is_authenticated:
            return self.get_response(request)
        # Kept on the request: the console's admin classes read it there (OrganisationScopedAdmin).
        request._console_organisation_id = administered_organisation_id(user=request.user)
        # Her organisation's zone; UTC for a superuser, who sees every organisation (None), or a
        # user who administers nothing ("").
        organisation_id = request._console_organisation_id
        zone = organisation_zone(caller=Caller.console(organisation_id=organisation_id, actor=console_actor(user=request.user))) if organisation_id else zoneinfo.ZoneInfo("UTC")
        with timezone.override(zone):
            return self.get_response(request)
