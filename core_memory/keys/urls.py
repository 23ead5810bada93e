from django.urls import path

from core_memory.keys import apis

urlpatterns = [
    path("tenants/<str:organisation_id>/keys", apis.KeyListCreateApi.as_view(), name="key-list"),
    path("tenants/<str:organisation_id>/keys/<str:key_id>", apis.KeyDetailApi.as_view(), name="key-detail"),
    path("subject-tokens", apis.SubjectTokenCreateApi.as_view(), name="subject-token-create"),
]
