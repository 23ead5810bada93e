"""The proposal routes: `management` and `memory` (with `knowledge`, which memory needs)."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from core_memory.base.api.pagination import IdCursorPagination, ListQuerySerializer, paginated_response, query_parameters_read
from core_memory.base.api.schema import error_responses
from core_memory.base.api.views import CoreApi
from core_memory.base.errors import PermissionDenied
from maintenance.models import Proposal
from maintenance.selectors import proposal_get_available, proposal_list
from maintenance.services.proposals import proposal_apply, proposal_reject
from stores.selectors import index_get_available

PROPOSAL_CAPABILITIES = ("management", "knowledge", "memory")
PROPOSAL_NOT_FOUND = "No such proposal for this key (also: another organisation's, or of an index the key's policy does not name or that was deleted)."


class ProposalSourceSerializer(serializers.Serializer):
    memory_id = serializers.CharField(source="record_id")
    subject = serializers.CharField(source="record.subject")


class ProposalOutputSerializer(serializers.Serializer):
    id = serializers.CharField()
    index_id = serializers.CharField()
    type = serializers.CharField()
    text = serializers.CharField()
    confidence = serializers.FloatField()
    reason = serializers.ChoiceField(
        choices=Proposal.Reason.values,
        help_text="`several_persons`: the memories of several persons hold it the same way; `general_knowledge`: the analysis model judged it general knowledge of the organisation.",
    )
    status = serializers.ChoiceField(choices=Proposal.Status.values)
    sources = ProposalSourceSerializer(many=True, help_text="The personal records it rests on, with their persons.")
    memory_id = serializers.CharField(source="applied_record_id", allow_null=True, help_text="The shared record applying it wrote (or confirmed).")
    decided_by = serializers.CharField(allow_null=True, help_text="Who applied or rejected it: a key id or `console:<username>`.")
    decided_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()

    def to_representation(self, instance):
        data = super().to_representation(instance)
        data["decided_by"] = data["decided_by"] or None
        return data


class _ProposalApi(CoreApi):
    """Proposals are the organisation's: they rest on several persons' records, so a request for
    one person (`X-Core-Subject`; a subject token has no `management`) may not use them."""

    required_capabilities = PROPOSAL_CAPABILITIES
    OutputSerializer = ProposalOutputSerializer

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        if self.request_subject() is not None:
            raise PermissionDenied("Proposals are the organisation's: a request for one person cannot use them.", param="X-Core-Subject")


class ProposalListApi(_ProposalApi):
    """`GET /v1/memory/proposals`."""

    pagination_class = IdCursorPagination

    class FilterSerializer(ListQuerySerializer):
        index_id = serializers.CharField(max_length=40, required=False)
        status = serializers.ChoiceField(choices=Proposal.Status.values, required=False)

    @extend_schema(responses={200: ProposalOutputSerializer(many=True), **error_responses(403, 404)})
    def get(self, request):
        """List proposals

        Suggestions to copy a person's fact into a shared record, newest first: made by the
        improvement analyses of stores with `promotion` on. Of the indexes the key may read,
        or of `index_id`; `status` is `pending`, `applied` or `rejected`. Needs `management` and
        `memory`.
        """
        filters = query_parameters_read(request.query_params, self.FilterSerializer)
        index = None
        if "index_id" in filters:
            index = index_get_available(caller=self.caller, index_id=filters["index_id"], param="index_id", right="read")
        proposals = proposal_list(caller=self.caller, index=index, status=filters.get("status"))
        return paginated_response(queryset=proposals, request=request, view=self, serializer_class=self.OutputSerializer)


class _ProposalDecisionApi(_ProposalApi):
    decide = None

    def post(self, request, proposal_id: str):
        caller = self.caller
        proposal = type(self).decide(caller=caller, proposal_id=proposal_id)
        return Response(self.OutputSerializer(proposal_get_available(caller=caller, proposal_id=proposal.pk)).data)


class ProposalApplyApi(_ProposalDecisionApi):
    """`POST /v1/memory/proposals/{id}/apply`."""

    decide = staticmethod(proposal_apply)

    @extend_schema(
        request=None,
        responses={
            200: ProposalOutputSerializer,
            **error_responses(403, 404, 409, e404=PROPOSAL_NOT_FOUND, e409="The proposal was already applied or rejected."),
        },
    )
    def post(self, request, proposal_id: str):
        """Apply a proposal

        Writes a new shared record of nobody in particular with the proposal's type and text and the
        store's promotion `labels` as its metadata (`source: promotion`); a shared record with the
        same text is confirmed instead. The persons' own records stay theirs. Audited as
        `proposal.applied`. Needs `management`, `memory` and the policy's write right on the index
        (403 otherwise, audited as `memory.write_denied`).
        """
        return super().post(request, proposal_id)


class ProposalRejectApi(_ProposalDecisionApi):
    """`POST /v1/memory/proposals/{id}/reject`."""

    decide = staticmethod(proposal_reject)

    @extend_schema(
        request=None,
        responses={
            200: ProposalOutputSerializer,
            **error_responses(403, 404, 409, e404=PROPOSAL_NOT_FOUND, e409="The proposal was already applied or rejected."),
        },
    )
    def post(self, request, proposal_id: str):
        """Reject a proposal

        Nothing is written to the store; the proposal stays, rejected, so its records are never
        proposed again. Audited as `proposal.rejected`. Needs `management`, `memory` and the policy's
        write right on the index.
        """
        return super().post(request, proposal_id)
