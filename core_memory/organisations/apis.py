from rest_framework import serializers
from rest_framework.response import Response

from core_memory.base.api.views import CoreApi
from core_memory.base.validation import StrictSerializer, TimeZoneField
from core_memory.organisations.models import ORGANISATION_CAPABILITIES, RATE_LIMIT_MOST
from core_memory.organisations.selectors import organisation_get_own
from core_memory.organisations.services import organisation_update


class ImprovementsSerializer(StrictSerializer):
    enabled = serializers.BooleanField()


class OrganisationOutputSerializer(serializers.Serializer):
    id = serializers.CharField()
    name = serializers.CharField()
    timezone = serializers.CharField()
    capabilities = serializers.ListField(child=serializers.CharField())
    offered_models = serializers.ListField(child=serializers.CharField(), source="offered_model_ids")
    offered_embedding_models = serializers.ListField(
        child=serializers.CharField(),
        source="offered_embedding_model_ids",
        help_text="Ids from `CORE_EMBEDDING_MODELS` its indexes may embed with; the model inside Core is offered always.",
    )
    offered_rerank_models = serializers.ListField(
        child=serializers.CharField(), source="offered_rerank_model_ids", help_text="Ids from `CORE_RERANK_MODELS` its indexes may rerank with."
    )
    helper_model = serializers.CharField(allow_null=True)
    monthly_token_limit = serializers.IntegerField(allow_null=True)
    audit_retention_days = serializers.IntegerField()
    improvements = serializers.JSONField()
    rate_limit_per_minute = serializers.IntegerField(
        source="key_rate_limit_per_minute", help_text="Requests per minute each key may make (beyond it: 429 with Retry-After)."
    )
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class OrganisationDetailApi(CoreApi):
    """`GET/PATCH /v1/tenants/{org_id}`: only the caller's own organisation."""

    required_capabilities = ("management",)
    OutputSerializer = OrganisationOutputSerializer

    class InputSerializer(StrictSerializer):
        name = serializers.CharField(max_length=200)
        timezone = TimeZoneField(max_length=64)
        capabilities = serializers.ListField(child=serializers.ChoiceField(choices=ORGANISATION_CAPABILITIES))
        offered_models = serializers.ListField(child=serializers.CharField(max_length=200), allow_null=True)
        offered_embedding_models = serializers.ListField(
            child=serializers.CharField(max_length=200), allow_null=True, help_text="Ids from `CORE_EMBEDDING_MODELS`; null: all."
        )
        offered_rerank_models = serializers.ListField(
            child=serializers.CharField(max_length=200), allow_null=True, help_text="Ids from `CORE_RERANK_MODELS`; null: all."
        )
        helper_model = serializers.CharField(max_length=200, allow_null=True)
        monthly_token_limit = serializers.IntegerField(min_value=0, max_value=2**63 - 1, allow_null=True)
        audit_retention_days = serializers.IntegerField(min_value=1, max_value=36_500)
        improvements = ImprovementsSerializer()
        rate_limit_per_minute = serializers.IntegerField(
            min_value=1, max_value=RATE_LIMIT_MOST, allow_null=True, help_text="null: the server's CORE_RATE_LIMIT_PER_MINUTE."
        )

        def validate_improvements(self, value: dict) -> dict:
            # A partial PATCH makes nested fields optional; the settings object stays whole.
            if "enabled" not in value:
                raise serializers.ValidationError({"enabled": ["This field is required."]})
            return dict(value)

    def get(self, request, organisation_id: str):
        """Read the organisation

        Its name, time zone, capabilities, offered models, helper model, monthly token limit, audit
        retention and improvement settings. Only the key's own organisation; needs `management`.
        """
        organisation = organisation_get_own(caller=self.principal, asked_id=organisation_id)
        return Response(self.OutputSerializer(organisation).data)

    def patch(self, request, organisation_id: str):
        """Change the organisation

        Sets the given settings. `offered_models` lists ids from `CORE_MODELS` (null: all); the
        helper model must stay offered. `offered_embedding_models` and `offered_rerank_models` list
        ids from `CORE_EMBEDDING_MODELS` and `CORE_RERANK_MODELS` (null: all); an index already using
        a model taken off keeps it. Needs `management`. Audited as `organisation.updated`.
        """
        organisation = organisation_get_own(caller=self.principal, asked_id=organisation_id)
        serializer = self.InputSerializer(data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        organisation = organisation_update(
            caller=self.principal, organisation=organisation, changes=dict(serializer.validated_data)
        )
        return Response(self.OutputSerializer(organisation).data)
