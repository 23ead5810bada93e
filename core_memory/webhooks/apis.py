"""The webhook routes: subscriptions of the key's organisation and their delivery log. Managing
where the organisation's events go is the organisation's business: `management`."""
from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from core_memory.base.api.pagination import IdCursorPagination, ListQuerySerializer, paginated_response, query_parameters_read
from core_memory.base.api.schema import error_responses
from core_memory.base.api.views import CoreApi
from core_memory.base.validation import StrictSerializer
from core_memory.webhooks.models import EVENT_KINDS, SUBSCRIPTION_STATUSES
from core_memory.webhooks.selectors import webhook_deliveries_list, webhook_subscription_get, webhook_subscriptions_list
from core_memory.webhooks.services import webhook_subscription_create, webhook_subscription_delete, webhook_subscription_update

NOT_FOUND = "No such webhook (also: another organisation's)."
URL_HELP = (
    "An http:// or https:// address. Refused: Core's own names, and (unless the operator allows private networks) "
    "loopback, private and link-local addresses, also when a name resolves to one."
)


class SubscriptionOutputSerializer(serializers.Serializer):
    id = serializers.CharField()
    url = serializers.CharField()
    events = serializers.ListField(child=serializers.CharField())
    description = serializers.CharField()
    status = serializers.ChoiceField(choices=SUBSCRIPTION_STATUSES)
    paused_reason = serializers.CharField(help_text="Why it is paused; empty while it is active.")
    paused_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class SubscriptionCreatedSerializer(SubscriptionOutputSerializer):
    secret = serializers.CharField(
        allow_null=True, help_text="`whsec_…`: verifies the deliveries' `webhook-signature`. Shown once (null on a replay)."
    )


class AttemptSerializer(serializers.Serializer):
    number = serializers.IntegerField()
    at = serializers.DateTimeField()
    status_code = serializers.IntegerField(allow_null=True, help_text="What the receiver answered; null when it could not be reached.")
    duration_ms = serializers.IntegerField()
    error_code = serializers.CharField(help_text="Empty when delivered; else `http_<status>`, `timeout`, `connection_error`, `address_refused`.")
    error_message = serializers.CharField()


class DeliveryOutputSerializer(serializers.Serializer):
    id = serializers.CharField()
    event_id = serializers.CharField(source="run_id", help_text="The `webhook-id` header of every attempt.")
    event = serializers.CharField(source="run.kind")
    payload = serializers.JSONField(source="run.payload")
    status = serializers.CharField(help_text="`queued`, `running`, `delivered` or `failed`.")
    attempts = AttemptSerializer(many=True, source="log", help_text="Every attempt, first to last.")
    next_attempt_at = serializers.DateTimeField(allow_null=True, help_text="When a failed delivery is tried again; null: no more tries.")
    created_at = serializers.DateTimeField()


class SubscriptionInputSerializer(StrictSerializer):
    url = serializers.URLField(max_length=2000, help_text=URL_HELP)
    events = serializers.ListField(child=serializers.ChoiceField(choices=EVENT_KINDS), min_length=1, max_length=len(EVENT_KINDS))
    description = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")


class WebhookListCreateApi(CoreApi):
    """`GET` and `POST /v1/webhooks`."""

    required_capabilities = ("management",)
    pagination_class = IdCursorPagination
    idempotency_secret_fields = ("secret",)
    InputSerializer = SubscriptionInputSerializer
    OutputSerializer = SubscriptionOutputSerializer
    FilterSerializer = ListQuerySerializer

    def get(self, request):
        """List webhooks

        The organisation's subscriptions, newest first (secrets are never shown again). Needs `management`.
        """
        query_parameters_read(request.query_params, self.FilterSerializer)
        return paginated_response(
            queryset=webhook_subscriptions_list(caller=self.principal), request=request, view=self,
            serializer_class=self.OutputSerializer,
        )

    @extend_schema(responses={201: SubscriptionCreatedSerializer, **error_responses(400)})
    def post(self, request):
        """Subscribe to events

        Sends the organisation's events of the named kinds to `url`, each as a JSON POST signed as
        Standard Webhooks says (`webhook-id`, `webhook-timestamp`, `webhook-signature`), with
        retries and backoff. The answer holds the subscription's `secret`, shown this once. A
        payload names ids and kinds (`{"type", "timestamp", "data"}`), never what a record says.
        Needs `management`.
        """
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        subscription = webhook_subscription_create(caller=self.principal, **serializer.validated_data)
        body = {**self.OutputSerializer(subscription).data, "secret": subscription.secret}
        return Response(body, status=status.HTTP_201_CREATED)


class WebhookDetailApi(CoreApi):
    """`GET`, `PATCH` and `DELETE /v1/webhooks/{id}`."""

    required_capabilities = ("management",)
    OutputSerializer = SubscriptionOutputSerializer

    class InputSerializer(SubscriptionInputSerializer):
        status = serializers.ChoiceField(
            choices=SUBSCRIPTION_STATUSES, help_text="`active` resumes a paused subscription; `paused` pauses it."
        )

    @extend_schema(responses={200: SubscriptionOutputSerializer, **error_responses(404, e404=NOT_FOUND)})
    def get(self, request, webhook_id: str):
        """Read a webhook

        The subscription: its address, events, description and whether it is active or paused
        (and why). Its secret is not shown again. Needs `management`.
        """
        subscription = webhook_subscription_get(caller=self.principal, subscription_id=webhook_id)
        return Response(self.OutputSerializer(subscription).data)

    @extend_schema(responses={200: SubscriptionOutputSerializer, **error_responses(400, 404, e404=NOT_FOUND)})
    def patch(self, request, webhook_id: str):
        """Change a webhook

        Sets `url`, `events`, `description` or `status`. Resuming a paused subscription
        (`"status": "active"`) sends what waited for it, also the deliveries that had used their attempts.
        """
        serializer = self.InputSerializer(data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        subscription = webhook_subscription_update(
            caller=self.principal, subscription_id=webhook_id, changes=dict(serializer.validated_data)
        )
        return Response(self.OutputSerializer(subscription).data)

    @extend_schema(responses={204: OpenApiResponse(description="Deleted, with its delivery log."), **error_responses(404, e404=NOT_FOUND)})
    def delete(self, request, webhook_id: str):
        """Delete a webhook

        Nothing more is sent to it; its waiting deliveries and its delivery log go with it.
        """
        webhook_subscription_delete(caller=self.principal, subscription_id=webhook_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class WebhookDeliveryListApi(CoreApi):
    """`GET /v1/webhooks/{id}/deliveries`: the delivery log."""

    required_capabilities = ("management",)
    pagination_class = IdCursorPagination
    OutputSerializer = DeliveryOutputSerializer
    FilterSerializer = ListQuerySerializer

    @extend_schema(responses={200: DeliveryOutputSerializer(many=True), **error_responses(404, e404=NOT_FOUND)})
    def get(self, request, webhook_id: str):
        """List a webhook's deliveries

        Newest first: each event sent (or waiting) with its payload, its status and every attempt
        — when, the receiver's status code, how long it took, and why it failed.
        """
        query_parameters_read(request.query_params, self.FilterSerializer)
        subscription = webhook_subscription_get(caller=self.principal, subscription_id=webhook_id)
        return paginated_response(
            queryset=webhook_deliveries_list(subscription=subscription), request=request, view=self, serializer_class=self.OutputSerializer
        )
