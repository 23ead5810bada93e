from django.urls import path

from core_memory.persons import apis

urlpatterns = [
    path("persons/<str:subject>", apis.PersonApi.as_view(), name="person-detail"),
]
