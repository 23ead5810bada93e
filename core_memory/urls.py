from django.contrib import admin
from django.urls import include, path
from django.http import HttpResponseRedirect

from core_memory.api.docs import ApiDocumentApi, RedocPage, SwaggerPage
from core_memory.api.health import healthz, readyz
from core_memory.api.metrics import metrics



def _redirect_to(url: str):
    """A plain redirect that keeps the query (a function, not a view class: the API's route
    matrix, tests/test_isolation.py, lists the view classes under v1/)."""

    def redirect(request):
        query = request.META.get("QUERY_STRING", "")
        return HttpResponseRedirect(f"{url}?{query}" if query else url)

    return redirect


urlpatterns = [
    # A browser pointed at the server lands in the console.
    path("", _redirect_to("/console/"), name="home"),
    path("healthz", healthz, name="healthz"),
    # A load balancer's probe may add the slash: it is answered, not redirected.
    path("healthz/", healthz, name="healthz-slash"),
    # Readiness: whether this process can serve now (README "Operations").
    path("readyz", readyz, name="readyz"),
    path("readyz/", readyz, name="readyz-slash"),
    # Prometheus's scrape, for the token in CORE_METRICS_TOKEN only (README "Operations").
    path("metrics", metrics, name="metrics"),
    # The documents' addresses have no trailing slash, as the API's; with one they redirect.
    path("v1/schema/", _redirect_to("/v1/schema"), name="schema-slash"),
    path("v1/docs/", _redirect_to("/v1/docs"), name="docs-slash"),
    path("v1/redoc/", _redirect_to("/v1/redoc"), name="redoc-slash"),
    path("console/", admin.site.urls),
    path("i18n/", include("django.conf.urls.i18n")),
    path("v1/schema", ApiDocumentApi.as_view(), name="schema"),
    path("v1/docs", SwaggerPage.as_view(url_name="schema"), name="docs"),
    path("v1/redoc", RedocPage.as_view(url_name="schema"), name="redoc"),
    path("v1/", include("core_memory.organisations.urls")),
    path("v1/", include("core_memory.keys.urls")),
    path("v1/", include("core_memory.api.urls")),
    path("v1/", include("core_memory.llm.urls")),
    path("v1/", include("core_memory.threads.urls")),
    path("v1/", include("core_memory.flows.turns.urls")),
    path("v1/", include("memory.urls")),
    path("v1/", include("extraction.urls")),
    path("v1/", include("maintenance.urls")),
    path("v1/", include("audit.urls")),
    path("v1/", include("core_memory.webhooks.urls")),
    # The same turns in OpenAI's wire format, for apps written against OpenAI's SDKs.
    path("openai/v1/", include("core_memory.openai_compat.urls")),
]

# API addresses answer errors as JSON; the console keeps Django's pages.
handler400 = "core_memory.base.api.exceptions.bad_request"
handler404 = "core_memory.console.errors.not_found"
handler500 = "core_memory.base.api.exceptions.server_error"
