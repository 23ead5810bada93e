from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from core_memory.base.api.views import CoreApi
from core_memory.base.validation import StrictSerializer
from core_memory.flows.erasure import person_erase
from core_memory.flows.export import person_export
from core_memory.persons.services import person_update


class PersonOutputSerializer(serializers.Serializer):
    subject = serializers.CharField()
    helper_model_may_read = serializers.BooleanField()


class PersonApi(CoreApi):
    """`PATCH /v1/persons/{subject}` (memory) sets her rules; `DELETE` (management) erases her."""

    required_capabilities = {"PATCH": ("memory",), "DELETE": ("management",)}
    OutputSerializer = PersonOutputSerializer

    class InputSerializer(StrictSerializer):
        helper_model_may_read = serializers.BooleanField(required=False)

    def patch(self, request, subject: str):
        """Set a person's rules

        Her rules, e.g. `{"helper_model_may_read": false}`: the helper model is then never shown her
        conversations or records. She exists from the moment she is first named. Needs `memory`.
        """
        subject = self.path_person(subject)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        person = person_update(
            caller=self.principal, organisation=self.organisation, subject=subject, **serializer.validated_data
        )
        return Response(self.OutputSerializer(person).data)

    @extend_schema(
        responses={
            200: inline_serializer(
                name="PersonErasure",
                fields={
                    "subject": serializers.CharField(),
                    "erased": serializers.DictField(
                        child=serializers.IntegerField(),
                        help_text=(
                            "How many of each kind went: `records` (of every type but episodes and lessons), `episodes`, "
                            "`lessons`, `proposals`, `threads`, `thread_placeholders`, `extraction_windows`, "
                            "`maintenance_jobs`, `subject_tokens`, `webhook_events` (events about her, with their deliveries), "
                            "`console_actions` (the console's action log "
                            "about her records and threads), `idempotent_answers` (stored answers about her) and "
                            "`audit_events_scrubbed` (audit events, other than erasures, that named her or her records, threads or turns)."
                        ),
                    ),
                },
            )
        }
    )
    def delete(self, request, subject: str):
        """Erase a person

        Everything Core holds about her goes, in one transaction: her records with their history, her
        episodes and lessons, every proposal that rests only on her records, her conversations (threads
        with their items and responses, their extraction windows and redaction values), maintenance's
        work about her, her subject tokens and her rules; the answer counts what went. Erasing a
        person never named is a 200 too. Audited as `person.erased`. Needs `management`.
        """
        subject = self.path_person(subject)
        return Response(person_erase(caller=self.principal, subject=subject))


class PersonExportApi(CoreApi):
    """`GET /v1/persons/{subject}/export`: everything Core holds about her (GDPR access)."""

    required_capabilities = ("management",)

    @extend_schema(
        responses={
            200: OpenApiResponse(
                {"type": "object", "additionalProperties": True, "required": ["format", "version", "exported_at", "organisation_id", "subject"],
                 "properties": {
                     "format": {"type": "string", "enum": ["core-geheugen.person-export"]},
                     "version": {"type": "integer"},
                     "exported_at": {"type": "string", "format": "date-time"},
                     "organisation_id": {"type": "string"},
                     "subject": {"type": "string"},
                     "person": {"type": "object", "nullable": True, "description": "Her rules; null when she has none."},
                     "records": {"type": "array", "items": {"type": "object"}, "description": "Her records of every index and status, each with `provenance` and `history` (every version)."},
                     "episodes": {"type": "array", "items": {"type": "object"}},
                     "lessons": {"type": "array", "items": {"type": "object"}},
                     "threads": {"type": "array", "items": {"type": "object"}, "description": "Her conversations with their items."},
                     "subject_tokens": {"type": "array", "items": {"type": "object"}, "description": "Tokens minted for her (no secrets)."},
                 }},
                description="The export document (docs/portability.md); later versions of Core add parts as new keys.",
            )
        }
    )
    def get(self, request, subject: str):
        """Export a person

        One JSON document with everything Core holds about her that this key may read: her rules,
        her records of every index the key may read (active, ended and deleted ones, each with
        provenance and every stored version), her episodes and lessons, her conversations with
        their items (a memory tool's call or result of an index the key may not read is
        `withheld`), and the subject tokens minted for her (never a secret). For a person never
        named the parts are empty. Audited as `person.exported`. Needs `management`.
        """
        subject = self.path_person(subject)
        return Response(person_export(caller=self.principal.acting_for(subject)))
