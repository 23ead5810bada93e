from django.urls import path

from core_memory.threads import apis

urlpatterns = [
    path("threads", apis.ThreadCreateApi.as_view(), name="thread-create"),
    path("threads/<str:thread_id>", apis.ThreadDetailApi.as_view(), name="thread-detail"),
    path("threads/<str:thread_id>/items", apis.ThreadItemsApi.as_view(), name="thread-items"),
]
