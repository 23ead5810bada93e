from django.urls import path

from core_memory.flows.turns import apis

urlpatterns = [
    path("responses", apis.ResponseCreateApi.as_view(), name="response-create"),
    path("responses/<str:response_id>", apis.ResponseDetailApi.as_view(), name="response-detail"),
    path("tools", apis.ToolListApi.as_view(), name="tool-list"),
]
