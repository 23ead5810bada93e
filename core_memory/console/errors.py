"""The console's own 404: an unknown object, person or page under /console/ answers a page in
the console's look and language, with its header and a way back, rather than a bare "Not Found"."""
from __future__ import annotations

from django.contrib import admin
from django.template.response import TemplateResponse
from django.utils.translation import gettext as _

from core_memory.base.api.exceptions import not_found as api_not_found

CONSOLE_PREFIX = "/console/"


def not_found(request, exception=None):
    """`handler404`: under /console/ the console's page (its header only to a signed-in
    administrator); elsewhere the API's JSON body or Django's page."""
    if not request.path.startswith(CONSOLE_PREFIX):
        return api_not_found(request, exception)
    user = getattr(request, "user", None)
    signed_in = bool(user is not None and user.is_active and user.is_staff)
    context = {
        **(admin.site.each_context(request) if signed_in else {"site_header": admin.site.site_header, "site_title": admin.site.site_title}),
        "title": _("Not found"),
        "signed_in": signed_in,
    }
    response = TemplateResponse(request, "admin/console_404.html", context, status=404)
    return response.render()
