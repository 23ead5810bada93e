from django.urls import path

from core_memory.organisations import apis

urlpatterns = [
    path("tenants/<str:organisation_id>", apis.OrganisationDetailApi.as_view(), name="tenant-detail"),
]
