from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from core_memory.base.api.pagination import IdCursorPagination, paginated_response
from core_memory.base.api.schema import PersonField, error_responses
from core_memory.base.api.views import CoreApi, validate_subject
from core_memory.base.errors import PermissionDenied
from core_memory.base.validation import OffsetDateTimeField, StrictSerializer
from core_memory.keys.configuration import MemoryConfigSerializer, memory_config_normalise
from core_memory.keys.models import KEY_CAPABILITIES
from core_memory.keys.selectors import key_get, key_list
from core_memory.keys.services import key_create, key_revoke, key_update, subject_token_create
from core_memory.organisations.selectors import organisation_get_own

MAX_SUBJECT_TOKEN_SECONDS = 30 * 24 * 3600


class PolicySerializer(StrictSerializer):
    read = serializers.ListField(child=serializers.CharField(max_length=40), default=list)
    write = serializers.ListField(child=serializers.CharField(max_length=40), default=list)


class KeyOutputSerializer(serializers.Serializer):
    """A key as every answer shows it: never its secret."""

    id = serializers.CharField()
    name = serializers.CharField()
    capabilities = serializers.ListField(child=serializers.CharField())
    policy = serializers.JSONField()
    memory = serializers.JSONField()
    pii_redaction = serializers.BooleanField()
    expires_at = serializers.DateTimeField(allow_null=True)
    revoked_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class KeyInputSerializer(StrictSerializer):
    name = serializers.CharField(max_length=200)
    capabilities = serializers.ListField(child=serializers.ChoiceField(choices=KEY_CAPABILITIES))
    policy = PolicySerializer()
    memory = MemoryConfigSerializer()
    pii_redaction = serializers.BooleanField(default=False)
    expires_at = OffsetDateTimeField(allow_null=True, default=None)


class KeyListCreateApi(CoreApi):
    """`GET/POST /v1/tenants/{org_id}/keys`; POST answers the secret, once."""

    required_capabilities = ("management",)
    pagination_class = IdCursorPagination
    idempotency_secret_fields = ("key",)
    OutputSerializer = KeyOutputSerializer

    class InputSerializer(KeyInputSerializer):
        capabilities = serializers.ListField(child=serializers.ChoiceField(choices=KEY_CAPABILITIES), default=list)
        policy = PolicySerializer(default=lambda: {"read": [], "write": []})
        memory = MemoryConfigSerializer(default=dict)

    class CreatedOutputSerializer(KeyOutputSerializer):
        key = serializers.CharField(allow_null=True, help_text="The secret, shown this once; null in an idempotent replay.")

    def get(self, request, organisation_id: str):
        """List keys

        The organisation's keys, newest first, revoked ones included (with `revoked_at`). No answer
        ever shows a secret. Needs `management`.
        """
        organisation = organisation_get_own(caller=self.principal, asked_id=organisation_id)
        return paginated_response(
            queryset=key_list(organisation=organisation), request=request, view=self, serializer_class=self.OutputSerializer
        )

    @extend_schema(responses={201: CreatedOutputSerializer, **error_responses(422, e422=(
        "`memory` asked for without `knowledge` (on `capabilities`), an index the organisation does not "
        "have, or the `Idempotency-Key` used with another body."
    ))})
    def post(self, request, organisation_id: str):
        """Create a key

        A key with its capabilities, its policy (`{"read": [...], "write": [...]}`, `"*"` meaning
        every index, also future ones) and its memory configuration (tools, injection block, decay).
        The answer holds its secret `key` (`core_sk_…`) this once; an idempotent replay answers it as
        null. Needs `management`.
        """
        organisation = organisation_get_own(caller=self.principal, asked_id=organisation_id)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        key, secret = key_create(
            organisation=organisation,
            caller=self.principal,
            name=data["name"],
            capabilities=data["capabilities"],
            policy=dict(data["policy"]),
            memory=data["memory"],
            pii_redaction=data["pii_redaction"],
            expires_at=data["expires_at"],
        )
        key.key = secret
        return Response(self.CreatedOutputSerializer(key).data, status=status.HTTP_201_CREATED)


class KeyDetailApi(CoreApi):
    """`GET/PATCH/DELETE /v1/tenants/{org_id}/keys/{key_id}`; DELETE revokes."""

    required_capabilities = ("management",)
    OutputSerializer = KeyOutputSerializer

    class InputSerializer(KeyInputSerializer):
        memory = serializers.DictField()

        def validate_memory(self, value: dict) -> dict:
            # Validated whole even in a partial PATCH: the given object replaces the stored one.
            return memory_config_normalise(value)

    def _key(self, organisation_id: str, key_id: str):
        organisation = organisation_get_own(caller=self.principal, asked_id=organisation_id)
        return key_get(organisation=organisation, key_id=key_id)

    def get(self, request, organisation_id: str, key_id: str):
        """Read a key

        One key of the organisation, without its secret. Needs `management`.
        """
        return Response(self.OutputSerializer(self._key(organisation_id, key_id)).data)

    def patch(self, request, organisation_id: str, key_id: str):
        """Change a key

        Sets the given fields; a given `policy` or `memory` replaces the stored one whole (defaults
        filled in). A revoked key cannot change (409). Audited as `key.updated`. Needs `management`.
        """
        key = self._key(organisation_id, key_id)
        serializer = self.InputSerializer(data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        key = key_update(caller=self.principal, key_id=key.id, changes=dict(serializer.validated_data))
        return Response(self.OutputSerializer(key).data)

    @extend_schema(responses={200: KeyOutputSerializer})
    def delete(self, request, organisation_id: str, key_id: str):
        """Revoke a key

        The key stops working at once and stays listed with `revoked_at`; the answer is the revoked
        key. Audited as `key.revoked`. Needs `management`.
        """
        key = key_revoke(caller=self.principal, key_id=self._key(organisation_id, key_id).id)
        return Response(self.OutputSerializer(key).data)


class SubjectTokenCreateApi(CoreApi):
    """`POST /v1/subject-tokens`: a token acting as this key for one person."""

    idempotency_secret_fields = ("token",)

    class InputSerializer(StrictSerializer):
        subject = PersonField()
        ttl_seconds = serializers.IntegerField(min_value=1, max_value=MAX_SUBJECT_TOKEN_SECONDS, default=3600)

        def validate_subject(self, value: str) -> str:
            return validate_subject(value, param="subject")

    class OutputSerializer(serializers.Serializer):
        token = serializers.CharField(allow_null=True, help_text="The secret, shown this once; null in an idempotent replay.")
        subject = serializers.CharField()
        expires_at = serializers.DateTimeField()

    @extend_schema(responses={201: OutputSerializer})
    def post(self, request):
        """Mint a subject token

        A bearer token `core_st_…` for one person: it acts as the minting key, limited to her (her
        records and the shared ones; no management routes, nothing organisation-wide). It expires
        after `ttl_seconds` (at most 30 days) and never after its key. The token is shown this once.
        """
        if self.principal.token_subject is not None:
            raise PermissionDenied("A subject token cannot mint subject tokens.")
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        token, secret = subject_token_create(caller=self.principal.acting_for(data["subject"]), ttl_seconds=data["ttl_seconds"])
        token.token = secret
        return Response(self.OutputSerializer(token).data, status=status.HTTP_201_CREATED)
