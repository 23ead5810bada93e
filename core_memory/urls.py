from django.contrib import admin
from django.urls import include, path

from core_memory.api.docs import ApiDocumentApi, RedocPage, SwaggerPage
from core_memory.api.health import healthz

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("console/", admin.site.urls),
    path("i18n/", include("django.conf.urls.i18n")),
    path("v1/schema", ApiDocumentApi.as_view(), name="schema"),
    path("v1/docs", SwaggerPage.as_view(url_name="schema"), name="docs"),
    path("v1/redoc", RedocPage.as_view(url_name="schema"), name="redoc"),
    path("v1/", include("core_memory.organisations.urls")),
    path("v1/", include("core_memory.keys.urls")),
    path("v1/", include("core_memory.persons.urls")),
    path("v1/", include("core_memory.llm.urls")),
    path("v1/", include("core_memory.threads.urls")),
    path("v1/", include("core_memory.agents.urls")),
    path("v1/", include("core_memory.flows.turns.urls")),
    path("v1/", include("stores.urls")),
    path("v1/", include("memory.urls")),
    path("v1/", include("extraction.urls")),
    path("v1/", include("maintenance.urls")),
    path("v1/", include("audit.urls")),
    # The same turns in OpenAI's wire format, for apps written against OpenAI's SDKs.
    path("openai/v1/", include("core_memory.openai_compat.urls")),
]

# API addresses answer errors as JSON; the console keeps Django's pages.
handler400 = "core_memory.api.exceptions.bad_request"
handler404 = "core_memory.api.exceptions.not_found"
handler500 = "core_memory.api.exceptions.server_error"
