from urllib.parse import unquote

from django.urls import path, register_converter

from core_memory.persons import apis


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
    path("persons/<subject:subject>/export", apis.PersonExportApi.as_view(), name="person-export"),
    path("persons/<subject:subject>", apis.PersonApi.as_view(), name="person-detail"),
]
