from django.urls import path

from maintenance import apis

urlpatterns = [
    path("memory/proposals", apis.ProposalListApi.as_view(), name="proposal-list"),
    path("memory/proposals/<str:proposal_id>/apply", apis.ProposalApplyApi.as_view(), name="proposal-apply"),
    path("memory/proposals/<str:proposal_id>/reject", apis.ProposalRejectApi.as_view(), name="proposal-reject"),
]
