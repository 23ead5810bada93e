from django.urls import path

from core_memory.openai_compat import apis

urlpatterns = [
    path("chat/completions", apis.ChatCompletionCreateApi.as_view(), name="openai-chat-completion-create"),
    path("responses", apis.ResponseCreateApi.as_view(), name="openai-response-create"),
    path("responses/<str:response_id>", apis.ResponseDetailApi.as_view(), name="openai-response-detail"),
    path("models", apis.ModelListApi.as_view(), name="openai-model-list"),
    path("models/<path:model_id>", apis.ModelDetailApi.as_view(), name="openai-model-detail"),
]
