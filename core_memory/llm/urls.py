from django.urls import path

from core_memory.llm import apis

urlpatterns = [
    path("models", apis.ModelListApi.as_view(), name="model-list"),
    path("embedding-models", apis.EmbeddingModelListApi.as_view(), name="embedding-model-list"),
    path("rerank-models", apis.RerankModelListApi.as_view(), name="rerank-model-list"),
]
