from drf_spectacular.utils import extend_schema
from rest_framework import serializers

from core_memory.base.api.pagination import ListQuerySerializer, query_parameters_read, sequence_paginated_response
from core_memory.base.api.schema import list_envelope
from core_memory.base.api.views import CoreApi
from core_memory.llm.registry import models_offered


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
