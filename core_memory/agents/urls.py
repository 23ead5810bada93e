from django.urls import path

from core_memory.agents import apis

urlpatterns = [
    path("agents", apis.AgentListCreateApi.as_view(), name="agent-list"),
    path("agents/<str:agent_id>", apis.AgentDetailApi.as_view(), name="agent-detail"),
    path("agents/<str:agent_id>/versions", apis.AgentVersionCreateApi.as_view(), name="agent-versions"),
]
