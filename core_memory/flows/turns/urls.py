from django.urls import path

from core_memory.flows.turns import apis

urlpatterns = [
    path("responses", apis.ResponseCreateApi.as_view(), name="response-create"),
    path("tools", apis.ToolListApi.as_view(), name="tool-list"),
]
