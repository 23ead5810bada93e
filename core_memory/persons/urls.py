from django.urls import path

from core_memory.persons import apis

urlpatterns = [
    # `path`: a person may be named with a slash in X-Core-Subject, and must be reachable here too.
    # Before the person's own route, which would read "anna/export" as her name.
    path("persons/<path:subject>/export", apis.PersonExportApi.as_view(), name="person-export"),
    path("persons/<path:subject>", apis.PersonApi.as_view(), name="person-detail"),
]
