"""The routes that span apps (a person's rules, export and erasure; agents, whose deletion reads
extraction's switches; indexes and stores, which start embedding and show the store's extraction
switch). Each app's own routes stay in its `urls.py`."""
from urllib.parse import unquote

from django.urls import path, register_converter

from core_memory.api import agents, persons, stores


class SubjectConverter:
    """A person's subject in the path as the client sent it (`PersonPathAsSentMiddleware`),
    decoded once here: `x%2Fexport` is the person "x/export", never x's export. A slash the
    client did not encode still reads as part of the name, as it always did."""

    regex = ".+"

    def to_python(self, value: str) -> str:
        return unquote(value, errors="strict")

    def to_url(self, value: str) -> str:
        return value


register_converter(SubjectConverter, "subject")

urlpatterns = [
    # Before the person's own route, which would read "anna/export" as her name.
    path("persons/<subject:subject>/export", persons.PersonExportApi.as_view(), name="person-export"),
    path("persons/<subject:subject>", persons.PersonApi.as_view(), name="person-detail"),
    path("agents", agents.AgentListCreateApi.as_view(), name="agent-list"),
    path("agents/<str:agent_id>", agents.AgentDetailApi.as_view(), name="agent-detail"),
    path("agents/<str:agent_id>/versions", agents.AgentVersionCreateApi.as_view(), name="agent-versions"),
    path("indexes", stores.IndexListCreateApi.as_view(), name="index-list"),
    path("indexes/<str:index_id>", stores.IndexDetailApi.as_view(), name="index-detail"),
    path("memory/stores/<str:index_id>", stores.StoreDetailApi.as_view(), name="store-detail"),
]
