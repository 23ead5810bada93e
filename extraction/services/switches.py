"""Setting a store's extraction switch and deleting its connector."""
from __future__ import annotations

from collections.abc import Collection
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

from audit.services import audit_event_record
from core_memory.agents.models import Agent
from core_memory.base.errors import Unprocessable
from core_memory.base.callers import Caller
from core_memory.keys.models import ApiKey
from core_memory.keys.selectors import key_was_issued
from core_memory.llm.registry import model_get
from core_memory.organisations.models import Organisation
from extraction.models import ExtractionConnector, ExtractionSwitch, ExtractionWindow
from memory.selectors import CORE_WRITTEN_TYPES
from stores.models import KnowledgeIndex, MemoryStore

# Failures a re-sent switch may have mended: it names its sender as the key it runs under.
AUTHOR_FAILURES = ("author_unavailable", "threads_capability_missing", "write_denied")
# The settings whose change makes failed windows worth reading again.
READING_SETTINGS = ("model", "instructions", "types")


def _stored(switch: ExtractionSwitch) -> dict:
    return {
        "model": switch.model,
        "instructions": switch.instructions,
        "types": list(switch.types),
        "schedule_minutes": switch.schedule_minutes,
        "threads": switch.threads,
        "episodes": switch.episodes,
        "lessons": switch.lessons,
        "filters": {"key_ids": list(switch.filter_key_ids), "agent_ids": list(switch.filter_agent_ids)},
    }


def _types_check(types: list[str]) -> None:
    for position, type_name in enumerate(types):
        if type_name in CORE_WRITTEN_TYPES:
            raise Unprocessable(
                gettext("Type %(type)r is written only by Core; switch on `episodes` or `lessons` instead.") % {"type": type_name},
                param=f"types[{position}]",
            )


def _filters_check(*, organisation: Organisation, filters: dict, previous: ExtractionSwitch | None) -> None:
    """Every agent id names a live agent of the organisation and every key id a key it ever
    issued (revoked, expired and recently deleted ones count: their threads are still there);
    ids the switch already had are not checked again. The agents named are locked until the
    switch is saved, so an agent cannot be deleted between this check and the switch naming it
    (deleting an agent a switch names is refused with a 409)."""
    had_agents = set(previous.filter_agent_ids) if previous else set()
    had_keys = set(previous.filter_key_ids) if previous else set()
    agent_ids = filters["agent_ids"]
    live = set(
        Agent.objects.for_organisation(organisation).live().select_for_update().filter(id__in=agent_ids).values_list("id", flat=True)
    )
    for position, agent_id in enumerate(agent_ids):
        if agent_id not in live and agent_id not in had_agents:
            raise Unprocessable(gettext("No agent %(agent)r in this organisation.") % {"agent": agent_id}, param=f"filters.agent_ids[{position}]")
    for position, key_id in enumerate(filters["key_ids"]):
        if key_id not in had_keys and not key_was_issued(organisation=organisation, key_id=key_id):
            raise Unprocessable(gettext("No key %(key)r was ever issued by this organisation.") % {"key": key_id}, param=f"filters.key_ids[{position}]")


def _windows_requeue(*, switch: ExtractionSwitch, codes: Collection[str] | None) -> int:
    """Failed windows (with one of `codes`, or all) back to `queued` for the next run."""
    failed = ExtractionWindow.objects.for_organisation(switch.organisation_id).filter(
        switch_id=switch.pk, status=ExtractionWindow.Status.FAILED
    )
    if codes is not None:
        failed = failed.filter(error_code__in=codes)
    return failed.update(
        status=ExtractionWindow.Status.QUEUED, attempts=0, error_code="", error_message="", run=None, queued_at=timezone.now()
    )


def _values_checked(*, organisation: Organisation, values: dict, sent: Collection[str], previous: ExtractionSwitch | None) -> dict:
    """The values the switch will hold. One sent disabled keeps what it leaves out, so stopping
    changes nothing else; one sent enabled replaces the stored one whole. Its model and
    filters are checked only when it is sent enabled."""
    values = dict(values)
    if previous is not None and not values["enabled"]:
        values.update({name: value for name, value in _stored(previous).items() if name not in sent})
    values.setdefault("model", "")
    _types_check(values["types"])
    if values["lessons"] and not values["episodes"]:
        raise Unprocessable(gettext("Session lessons need `episodes`: they are noted in the same reading of a session."), param="lessons")
    if values["enabled"]:
        model_get(organisation=organisation, model_id=values["model"], param="model")
        _filters_check(organisation=organisation, filters=values["filters"], previous=previous)
    return values


def _switch_saved(
    switch: ExtractionSwitch, *, previous: ExtractionSwitch | None, values: dict, connector: ExtractionConnector, key: ApiKey, requeued: int, now: datetime
) -> None:
    """Saves `values` into the switch (`previous`, or a new one). Switched on, or with windows
    re-queued, it runs at once; otherwise a shorter schedule brings its next run closer."""
    was_reading_episodes = previous is not None and previous.enabled and previous.episodes
    if values["enabled"]:
        if previous is None or not previous.enabled or requeued:
            switch.next_run_at = now
        else:
            switch.next_run_at = min(switch.next_run_at or now, now + timedelta(minutes=values["schedule_minutes"]))
    switch.connector = connector
    for name in ("enabled", "model", "instructions", "types", "schedule_minutes", "threads", "episodes", "lessons"):
        setattr(switch, name, values[name])
    switch.filter_key_ids = values["filters"]["key_ids"]
    switch.filter_agent_ids = values["filters"]["agent_ids"]
    switch.author_key_id = key.id
    switch.set_at = now
    # Sessions that come to rest after episodes were switched on get one.
    if not (values["enabled"] and values["episodes"]):
        switch.episodes_since = None
    elif not was_reading_episodes:
        switch.episodes_since = now
    switch.save()


@transaction.atomic(durable=True)
def extraction_switch_set(
    *, caller: Caller, index: KnowledgeIndex, values: dict, sent: Collection[str], now: datetime | None = None
) -> ExtractionSwitch:
    """Sets the index's switch from `values` (validated by
    `extraction.configuration.SwitchSerializer`; `sent` names the fields the request gave).

    The caller's key (the sender's) becomes the key extraction runs under, for windows already
    queued too.
    A switch sent enabled replaces the stored one whole (omitted fields take their defaults);
    one sent disabled keeps what it leaves out, so stopping changes nothing else (the
    store's known types among it). The 422s on its model and filters are checked when the
    switch is sent enabled. A deleted connector is replaced. Changing model, instructions or
    types re-queues the failed windows; re-sending re-queues those that failed for the key.
    """
    now = now or timezone.now()
    key = caller.key
    organisation = key.organisation
    previous = (
        ExtractionSwitch.objects.for_organisation(organisation)
        .select_for_update(of=("self",))
        .select_related("connector")
        .filter(index_id=index.pk)
        .first()
    )
    values = _values_checked(organisation=organisation, values=values, sent=sent, previous=previous)
    connector = previous.connector if previous is not None else None
    if connector is None or connector.deleted_at is not None:
        connector = ExtractionConnector.objects.create(organisation=organisation, index=index)
    requeued = 0
    if previous is not None:
        changed = any(_stored(previous)[name] != values[name] for name in READING_SETTINGS)
        requeued = _windows_requeue(switch=previous, codes=None if changed else AUTHOR_FAILURES)
    switch = previous or ExtractionSwitch(organisation=organisation, index=index)
    _switch_saved(switch, previous=previous, values=values, connector=connector, key=key, requeued=requeued, now=now)
    MemoryStore.objects.for_organisation(organisation).filter(index_id=index.pk).update(known_types=list(switch.types))
    audit_event_record(
        caller=caller,
        action="extraction.switch_set",
        target=index.id,
        details={
            "enabled": switch.enabled,
            "model": switch.model,
            "types": switch.types,
            "threads": switch.threads_read,
            "episodes": switch.episodes,
            "lessons": switch.lessons,
            "schedule_minutes": switch.schedule_minutes,
            "filters": {"key_ids": switch.filter_key_ids, "agent_ids": switch.filter_agent_ids},
            "connector_id": connector.id,
            "requeued_windows": requeued,
        },
    )
    return switch


@transaction.atomic(durable=True)
def connector_delete(*, caller: Caller, connector: ExtractionConnector) -> None:
    """Deletes the connector: its switch stops reading (`objects_missing`) until it is sent again."""
    deleted = (
        ExtractionConnector.objects.for_organisation(connector.organisation_id)
        .live()
        .filter(pk=connector.pk)
        .update(deleted_at=timezone.now())
    )
    if deleted:
        audit_event_record(
            caller=caller,
            action="connector.deleted",
            target=connector.id,
            details={"index_id": connector.index_id},
        )
