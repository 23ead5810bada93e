from django.urls import path

from core_memory.webhooks import apis

urlpatterns = [
    path("webhooks", apis.WebhookListCreateApi.as_view(), name="webhook-list"),
    path("webhooks/<str:webhook_id>", apis.WebhookDetailApi.as_view(), name="webhook-detail"),
    path("webhooks/<str:webhook_id>/deliveries", apis.WebhookDeliveryListApi.as_view(), name="webhook-deliveries"),
]
