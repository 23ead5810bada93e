from django.urls import path

from core_memory.llm import apis

urlpatterns = [
    path("models", apis.ModelListApi.as_view(), name="model-list"),
]
