from django.urls import path

from audit import apis

urlpatterns = [
    path("audit", apis.AuditEventListApi.as_view(), name="audit-list"),
]
