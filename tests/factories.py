"""factory_boy factories and small builders shared by every test package."""
from __future__ import annotations

import dataclasses
import json
from io import StringIO

import factory
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from core_memory.console.services import CONSOLE_APP_LABELS
from core_memory.base.callers import Caller
from core_memory.keys.models import ALL_INDEXES, KEY_CAPABILITIES
from core_memory.keys.services import key_create
from core_memory.organisations.models import Organisation
from memory.models import MemoryRecord
from memory.services.writes import RecordDraft
from stores.models import KnowledgeIndex
from stores.services import index_create


class OrganisationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Organisation

    name = factory.Sequence(lambda number: f"Organisation {number}")
    timezone = "Europe/Amsterdam"


def make_key(
    organisation: Organisation,
    *,
    capabilities=KEY_CAPABILITIES,
    read=(ALL_INDEXES,),
    write=(ALL_INDEXES,),
    memory: dict | None = None,
    **fields,
):
    """(key, secret) with the given rights; the defaults are the owner key of createorg."""
    return key_create(
        organisation=organisation,
        caller=Caller.system(organisation_id=organisation.id, actor="test"),
        name=fields.pop("name", "test key"),
        capabilities=list(capabilities),
        policy={"read": list(read), "write": list(write)},
        memory=memory,
        **fields,
    )


def createorg(*arguments) -> dict:
    """What `createorg … --json` prints: an organisation and its owner key, made by the command."""
    out = StringIO()
    call_command("createorg", *arguments, "--json", stdout=out, stderr=StringIO())
    return json.loads(out.getvalue())


def make_index(organisation: Organisation, name: str = "memory", **fields):
    return index_create(organisation=organisation, caller=Caller.system(organisation_id=organisation.id, actor="test"), name=name, **fields)


def make_record(index, text: str, *, type: str = "fact", subject: str | None = None, **fields) -> MemoryRecord:
    """A record made directly, not through the record service: no confirmation, no history
    reason, no audit; `created_at` and `changed_at` as given (changed_at defaults to now)."""
    created_at = fields.pop("created_at", None)
    record = MemoryRecord.objects.create(
        organisation_id=index.organisation_id,
        index=index,
        subject=subject,
        type=type,
        text=text,
        normalised_text=text.lower(),
        changed_at=fields.pop("changed_at", None) or timezone.now(),
        **fields,
    )
    if created_at is not None:
        MemoryRecord.objects.filter(pk=record.pk).update(created_at=created_at)
        record.created_at = created_at
    return record


def resolved_for(key, index):
    """The index as services expect to be handed it: read for `key` (KnowledgeIndex.objects.for_key)."""
    return KnowledgeIndex.objects.for_key(key).get(pk=index.pk)


def client_for(secret: str | None, *, subject: str | None = None) -> APIClient:
    client = APIClient()
    if secret:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}", **({"HTTP_X_CORE_SUBJECT": subject} if subject else {}))
    elif subject:
        client.credentials(HTTP_X_CORE_SUBJECT=subject)
    return client


CONSOLE_PASSWORD = "a long enough password"


def console_client(user) -> Client:
    """A browser logged in to the console as `user`."""
    client = Client()
    client.force_login(user)
    return client


def staff_without_organisation(*, with_permissions: bool):
    """A staff user bound to no organisation, with every console permission or none."""
    user = get_user_model().objects.create_user(username="loose", password=CONSOLE_PASSWORD, is_staff=True)
    if with_permissions:
        user.user_permissions.set(Permission.objects.filter(content_type__app_label__in=CONSOLE_APP_LABELS))
    return user


ERASURE_RECEIPT_KINDS = (
    "records", "episodes", "lessons", "proposals", "threads", "thread_placeholders", "extraction_windows", "maintenance_jobs", "subject_tokens", "webhook_events",
    "console_actions", "idempotent_answers", "audit_events_scrubbed",
)


def erasure_receipt(**counts: int) -> dict:
    """What erasing a person answers (R-3.4): a count for every kind, these as given, the rest zero."""
    assert set(counts) <= set(ERASURE_RECEIPT_KINDS)
    return {kind: counts.get(kind, 0) for kind in ERASURE_RECEIPT_KINDS}


def work_command_summary(command: str, *arguments, now=None) -> dict:
    """Runs `run_extraction` or `run_maintenance` at `now` and gives its JSON summary, also when
    it ran but could not do all its work (it then exits 1 and the summary says why, under "error")."""
    out = StringIO()
    moment = now or timezone.now()
    try:
        call_command(command, *arguments, "--now", moment.isoformat(), stdout=out)
    except CommandError:
        if not out.getvalue():
            raise  # refused before it ran
    return json.loads(out.getvalue())


DRAFT_FIELDS = {field.name for field in dataclasses.fields(RecordDraft)}


def with_draft(**arguments) -> dict:
    """A write's keyword arguments as a test spells them (type, text, metadata… beside key and
    subject), with the draft's fields gathered into `draft` and the key, subject and actor into `caller`."""
    draft = {name: arguments.pop(name) for name in list(arguments) if name in DRAFT_FIELDS}
    if "key" in arguments:
        arguments["caller"] = Caller(key=arguments.pop("key"), subject=arguments.pop("subject", None), actor=arguments.pop("actor", ""))
    return {**arguments, "draft": RecordDraft(**draft)}
