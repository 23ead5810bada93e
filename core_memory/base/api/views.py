"""The base of every API view: authentication, capabilities, person, idempotency.

Subclasses declare `required_capabilities`; tenancy comes from the credential and
every id in a request goes through a scoped accessor that answers 404 for
"missing" and "not yours" alike.
"""
from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _
from rest_framework.exceptions import APIException, MethodNotAllowed
from rest_framework.response import Response
from rest_framework.views import APIView

from core_memory.base.api import idempotency
from core_memory.base.api.parsers import CoreJSONParser
from core_memory.base.api.throttling import rate_limit_headers
from core_memory.base.callers import Caller
from core_memory.base.replicas import Reader, reader_set
from core_memory.base.errors import InvalidRequest, PermissionDenied
from core_memory.base.storable import UNSTORABLE_CHARACTERS, unstorable_value

SUBJECT_HEADER = "HTTP_X_CORE_SUBJECT"
MAX_SUBJECT_LENGTH = 255


def validate_subject(value, *, param: str) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_SUBJECT_LENGTH or UNSTORABLE_CHARACTERS.search(value):
        raise InvalidRequest(f"A person is a non-empty string of at most {MAX_SUBJECT_LENGTH} characters.", param=param)
    return value


class CoreApi(APIView):
    required_capabilities: tuple[str, ...] | dict[str, tuple[str, ...]] = ()
    parser_classes = [CoreJSONParser]
    # List views set this (and list with `paginated_response`); the schema reads it too.
    pagination_class = None
    # Answer fields holding a secret shown once: an idempotent replay answers them as
    # null rather than keeping the secret in clear for a day (docs/decisions.md).
    idempotency_secret_fields: tuple[str, ...] = ()
    # Methods that change what the whole organisation gets (indexes, stores, agents): a
    # subject token acts for one person and is refused them (HasCapabilities).
    organisation_wide_methods: tuple[str, ...] = ()

    @property
    def principal(self) -> Caller:
        """Who asks, as authentication handed it over: for the subject token's person, or for
        nobody yet (`caller` is for the request's person)."""
        return self.request.user

    @property
    def key(self) -> Any:
        return self.principal.key

    @property
    def organisation(self) -> Any:
        return self.principal.key.organisation

    @property
    def caller(self) -> Caller:
        """Who asks, for the request's person (`request_subject`): the key and her together."""
        return self.request_caller()

    def request_caller(self, *, body_user=None, body_param: str = "user") -> Caller:
        """Who asks, for the request's person as `request_subject` reads her, the body's `user` too."""
        subject = self.request_subject(body_user=body_user, body_param=body_param)
        reader_set(self._reader(subject))
        return self.principal.acting_for(subject)

    @property
    def reader(self) -> Reader:
        """Whose writes the request's reads must see (core_memory.base.replicas)."""
        return self._reader(self.request_subject())

    def _reader(self, subject: str | None) -> Reader:
        return Reader(organisation_id=self.organisation.id, person=subject, key_id=self.key.id)

    def request_subject(self, *, body_user=None, body_param: str = "user") -> str | None:
        """The request's person: token, else X-Core-Subject, else the body's `user`."""
        header = self.request.META.get(SUBJECT_HEADER)
        token_subject = self.principal.token_subject
        if token_subject is not None:
            if header is not None and header != token_subject:
                raise PermissionDenied(_("A subject token cannot act for another person."), param="X-Core-Subject")
            if body_user is not None and body_user != token_subject:
                raise PermissionDenied(_("A subject token cannot act for another person."), param=body_param)
            return token_subject
        if header is not None:
            return validate_subject(header, param="X-Core-Subject")
        if body_user is not None:
            return validate_subject(body_user, param=body_param)
        return None

    # Query parameter names a view reads by prefix (`metadata.<key>` filters).
    query_parameter_prefixes: tuple[str, ...] = ()

    def _refuse_unknown_query_parameters(self, request) -> None:
        """On a read, a query parameter the route does not read is a 400 naming it, like an
        unknown body field: its `FilterSerializer`'s fields, and `limit`/`cursor` on a list. (A
        write takes its input from the body; its query string is not read.)"""
        if request.method != "GET":
            return
        filters = getattr(self, "FilterSerializer", None)
        known = set(filters().fields) if filters is not None else set()
        if self.pagination_class is not None:
            known |= {"limit", "cursor"}
        for name in request.query_params:
            prefixed = bool(self.query_parameter_prefixes) and name.startswith(self.query_parameter_prefixes)
            if name not in known and not prefixed:
                raise InvalidRequest("Unknown query parameter.", param=name)

    def path_person(self, subject: str, *, param: str = "subject") -> str:
        """The person a route's path names (`/v1/persons/{subject}…`), checked: a request for one
        person — her subject token or her `X-Core-Subject` — acts only for her."""
        validate_subject(subject, param=param)
        if self.request_subject(body_user=subject, body_param=param) != subject:
            raise PermissionDenied(_("A request for one person cannot act for another."), param="X-Core-Subject")
        return subject

    # Idempotency wraps the handler once the caller is known.
    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        self._idempotency_row = None
        # The persons a stored answer is about, besides those it names (a view adds its thread's).
        self.idempotency_persons: set[str] = set()
        if request.method.lower() not in self.http_method_names or not hasattr(self, request.method.lower()):
            # Before anything is claimed: a method the route does not answer is a 405, whatever its headers.
            raise MethodNotAllowed(request.method)
        _refuse_unstorable(path_parameters=kwargs, query_parameters=request.query_params)
        self._refuse_unknown_query_parameters(request)
        # Who the request is for is checked on every route, not only those that ask for the person: the person header is
        # checked, and a subject token may not name another.
        reader_set(self._reader(self.request_subject()))
        idempotency_key = request.META.get(idempotency.HEADER)
        if idempotency_key is None or request.method not in idempotency.MUTATING_METHODS:
            return
        row, is_replay = idempotency.idempotency_claim(
            key_id=self.key.id,
            idempotency_key=idempotency_key,
            method=request.method,
            path=request.get_full_path(),
            body=request.body,
            person=self.principal.token_subject or request.META.get(SUBJECT_HEADER),
            organisation_id=self.organisation.id,
        )
        if is_replay:
            raise _Replay(Response(row.response_body, status=row.status_code, headers={"Idempotent-Replayed": "true"}))
        self._idempotency_row = row

    def handle_exception(self, exc):
        if isinstance(exc, _Replay):
            return exc.response
        try:
            response = super().handle_exception(exc)
        except Exception:
            # Unexpected (a 500): no answer to keep, so release the key and let the retry run.
            row, self._idempotency_row = getattr(self, "_idempotency_row", None), None
            if row is not None:
                idempotency.idempotency_release(row=row)
            raise
        self._idempotency_finish(response)
        return response

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        state = getattr(request, "rate_limit_state", None)
        if state is not None:
            for name, value in rate_limit_headers(state).items():
                response[name] = value
        if getattr(self, "_idempotency_row", None) is not None:
            self._idempotency_finish(response)
        return response

    def _idempotency_finish(self, response) -> None:
        row = getattr(self, "_idempotency_row", None)
        if row is None:
            return
        self._idempotency_row = None
        if getattr(response, "streaming", False):
            # The key stays claimed while the stream runs; its final JSON answer, when the
            # view gives one, is what a retry replays. Otherwise the key is released.
            final_answer = getattr(response, "idempotency_final_answer", None)
            if final_answer is None:
                idempotency.idempotency_release(row=row)
            else:
                response.streaming_content = _stream_then_complete(
                    response.streaming_content,
                    row=row,
                    status_code=response.status_code,
                    final_answer=final_answer,
                    persons=self._answer_persons(),
                )
            return
        body = getattr(response, "data", None)
        if isinstance(body, dict) and self.idempotency_secret_fields:
            body = {name: (None if name in self.idempotency_secret_fields else value) for name, value in body.items()}
        idempotency.idempotency_complete(row=row, status_code=response.status_code, body=body, persons=self._answer_persons())

    def _answer_persons(self) -> set[str]:
        """The persons the request spoke for or named (erasure removes her stored answers)."""
        request = self.request
        spoken_for = self.principal.token_subject or request.META.get(SUBJECT_HEADER)
        # An answer given before the body was read (a 404 of the path, a 415) may come with a body
        # that cannot be read at all (not JSON, a NUL in a text): it names nobody.
        try:
            named = idempotency.persons_named(request.data)
        except (APIException, InvalidRequest):
            named = set()
        return {*getattr(self, "idempotency_persons", ()), *named, *([spoken_for] if spoken_for else [])}


def _stream_then_complete(content, *, row, status_code: int, final_answer, persons: set[str]):
    """Passes a stream through; when it ends, stores `final_answer()` for a replay. A stream
    cut short (its reader left, or it failed) has no answer to replay and releases the key."""
    answer = None
    try:
        yield from content
        answer = final_answer()
    finally:
        if answer is None:
            idempotency.idempotency_release(row=row)
        else:
            idempotency.idempotency_complete(row=row, status_code=status_code, body=answer, persons=persons)


def _refuse_unstorable(*, path_parameters: dict, query_parameters) -> None:
    """A NUL in an id of the path, or in a query parameter's name or value, is a 400 naming it
   : a name reaches SQL too (`metadata.<name>` filters)."""
    named = [(name, [value]) for name, value in path_parameters.items()] + list(query_parameters.lists())
    for name, values in named:
        found = unstorable_value([name, values])
        if found is not None:
            raise InvalidRequest(found[1], param=name)


class _Replay(Exception):
    """Carries a stored answer out of `initial` past the handler."""

    def __init__(self, response: Response):
        super().__init__("idempotent replay")
        self.response = response
