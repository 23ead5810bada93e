"""The console's admin site: Django's admin with the Geheugen dashboard on its home
page and no "View site" link (the service has no public site to view).

`core_memory.console.admin_app.ConsoleAdminConfig` replaces `django.contrib.admin` in INSTALLED_APPS so that every
`@admin.register` lands on this site.
"""
from __future__ import annotations

from django.contrib import admin
from django.urls import path
from django.utils.translation import gettext_lazy as _

from audit.console import console_read_audit
from core_memory.base.callers import Caller
from core_memory.base.console.selectors import EVERY_ORGANISATION, administered_organisation_id, console_actor
from core_memory.console.search import search_view
from core_memory.console.selectors import dashboard_figures, platform_dashboard_figures


class ConsoleSite(admin.AdminSite):
    site_header = "Core Geheugen"
    site_title = "Core Geheugen"
    index_title = _("Console")
    site_url = None  # "View site" led to a bare 404: there is no public site
    index_template = "admin/console_index.html"
    # The console's own side menu (admin/console_nav.html): every section and the search box. Beside
    # the page from 1680 px, a row above it below that (console.css), so 1024 and 1400 px keep their full width.
    enable_nav_sidebar = True

    def get_urls(self):
        return [path("search/", self.admin_view(self.search_view), name="search"), *super().get_urls()]

    def search_view(self, request):
        """The search box's answer (core_memory.console.search)."""
        return search_view(self, request)

    def index(self, request, extra_context=None):
        """The app list and the dashboard; a read, so audited."""
        organisation_id = administered_organisation_id(user=request.user)
        viewer = console_actor(user=request.user)
        figures = None
        if organisation_id is EVERY_ORGANISATION:
            figures = platform_dashboard_figures()
        elif organisation_id:
            figures = dashboard_figures(caller=Caller.console(organisation_id=organisation_id, actor=viewer))
        if figures is not None:
            console_read_audit(
                actor=viewer,
                page="dashboard",
                shown=[],
                organisation_id=organisation_id,
                details={"shown": figures.summary()},
            )
        return super().index(request, {"dashboard": figures, **(extra_context or {})})
