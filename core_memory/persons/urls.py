from django.urls import path

from core_memory.persons import apis

urlpatterns = [
    # `path`: a person may be named with a slash in X-Core-Subject, and must be reachable here too.
    path("persons/<path:subject>", apis.PersonApi.as_view(), name="person-detail"),
]
