from django.urls import path

from extraction import apis

urlpatterns = [
    path("memory/stores/<str:index_id>/extraction", apis.ExtractionSwitchApi.as_view(), name="extraction-switch"),
    path("connectors/<str:connector_id>", apis.ConnectorDetailApi.as_view(), name="connector-detail"),
]
