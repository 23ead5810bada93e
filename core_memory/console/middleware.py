"""The console's protections: security headers on every console page, and a login
that slows down guessing without locking the rightful user out. After `LOGIN_FAILURES_PER_NAME`
failed logins for one name from one address (or `LOGIN_FAILURES_PER_ADDRESS` for any names)
within `LOGIN_WINDOW_SECONDS`, each further failure holds that name and address (or that
address) for a delay that doubles — 1, 2, 4 … seconds, at most `LOGIN_LONGEST_DELAY_SECONDS`;
while held, the login answers 429 with `Retry-After` without checking the password. Once the
delay is over, the right password logs in again, and from an address that has not failed it
always does: knowing an administrator's name is not enough to lock her out. The failures are
counted where the API's rate limits are (Redis, shared by every process;
core_memory.base.api.throttling)."""
from __future__ import annotations

import logging
import math

from django.http import HttpResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _

from core_memory.base.api.throttling import attempts_count, console_rate_limit_wait, held_for, hold_set
from core_memory.base.console.selectors import administered_organisation_id
from core_memory.console.selectors import administrator_rate_limit, organisation_zone

logger = logging.getLogger(__name__)

LOGIN_FAILURES_PER_NAME = 5
LOGIN_FAILURES_PER_ADDRESS = 30
# Failures are remembered this long, so the delay keeps growing over an attacker's hour.
LOGIN_WINDOW_SECONDS = 60 * 60
LOGIN_LONGEST_DELAY_SECONDS = 5 * 60
# The admin's own templates and ours load scripts and styles from our static files only.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'; "
    "object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
)


def _client_address(request) -> str:
    # The address the server saw; behind a proxy, REMOTE_ADDR is set from what it forwards.
    return request.META.get("REMOTE_ADDR") or "unknown"


class ConsoleProtectionMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not request.path_info.startswith("/console/"):
            return self.get_response(request)
        is_login = request.method == "POST" and request.path_info == reverse("admin:login")
        if is_login:
            held = max(held_for(name=name) for name in self._attempt_names(request))
            if held > 0:
                logger.warning("console.login.throttled", extra={"address": _client_address(request)})
                response = HttpResponse(_("Too many failed logins. Try again later."), status=429, content_type="text/plain; charset=utf-8")
                response["Retry-After"] = str(max(1, math.ceil(held)))
                return self._protected(response)
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            # The console is an entrance like the API: an administrator is held to her organisation's rate limit.
            wait = console_rate_limit_wait(user, organisation_limit=administrator_rate_limit(user=user))
            if wait is not None:
                response = HttpResponse(_("Too many requests. Try again later."), status=429, content_type="text/plain; charset=utf-8")
                response["Retry-After"] = str(math.ceil(wait))
                return self._protected(response)
        response = self.get_response(request)
        if is_login and response.status_code == 200:
            # The login form shown again: the name or password was wrong.
            for name, limit in zip(self._attempt_names(request), (LOGIN_FAILURES_PER_NAME, LOGIN_FAILURES_PER_ADDRESS)):
                count, _window_ends = attempts_count(name=name, seconds=LOGIN_WINDOW_SECONDS, add=True)
                if count >= limit:
                    hold_set(name=name, seconds=min(2 ** (count - limit), LOGIN_LONGEST_DELAY_SECONDS))
        return self._protected(response)

    @staticmethod
    def _attempt_names(request) -> tuple[str, str]:
        address = _client_address(request)
        username = (request.POST.get("username") or "").strip().casefold()[:150]
        return f"console-login:{address}:{username}", f"console-login:{address}"

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
        zone = organisation_zone(organisation_id=request._console_organisation_id)
        with timezone.override(zone):
            return self.get_response(request)
