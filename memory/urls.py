from django.urls import path, register_converter

from memory import apis
from memory.batches import apis as batch_apis


class RecordIdConverter:
    """Matches only `mem_` ids, so `memory/stores/…`, `memory/proposals…` stay other apps' routes."""

    regex = "mem_[0-9a-z]+"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(RecordIdConverter, "record_id")

urlpatterns = [
    path("memory", apis.MemoryListCreateApi.as_view(), name="memory-list"),
    path("memory/search", apis.MemorySearchApi.as_view(), name="memory-search"),
    path("memory/import", apis.MemoryImportApi.as_view(), name="memory-import"),
    path("memory/batch", batch_apis.MemoryBatchApi.as_view(), name="memory-batch"),
    path("memory/batch/delete", batch_apis.MemoryBatchDeleteApi.as_view(), name="memory-batch-delete"),
    path("memory/<record_id:record_id>", apis.MemoryDetailApi.as_view(), name="memory-detail"),
    path("memory/<record_id:record_id>/history", apis.MemoryHistoryApi.as_view(), name="memory-history"),
]
