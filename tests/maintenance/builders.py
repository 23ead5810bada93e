"""Builders for the maintenance tests: answers of the three model contracts, what a request
showed, episodes, and the switches a store's analyses need."""
from __future__ import annotations

import json
from datetime import timedelta

from django.utils import timezone

from maintenance.models import MaintenanceState
from memory.models import MemoryRecord
from stores.models import MemoryStore
from tests.factories import make_record
from tests.fake_model import completion

CONTRADICTIONS = "core_contradictions"
STORE_LESSON = "core_store_lesson"
PROMOTION = "core_promotion"


def contradictions(*pairs, usage=(50, 10)) -> dict:
    return completion(json.dumps({"contradictions": [list(pair) for pair in pairs]}), usage=usage)


def lesson(text: str, usage=(80, 12)) -> dict:
    return completion(json.dumps({"lesson": text}), usage=usage)


def general(*record_ids, usage=(40, 8)) -> dict:
    return completion(json.dumps({"general": list(record_ids)}), usage=usage)


def nothing_found(request_body: dict) -> dict:
    """The fake model's default in these tests: the empty answer of whichever shape was asked."""
    name = request_body["response_format"]["json_schema"]["name"]
    return {CONTRADICTIONS: contradictions(), STORE_LESSON: lesson("Vraag eerst naar het klantnummer."), PROMOTION: general()}[name]


def shown(request) -> dict:
    """The data document a request showed the model (its user message)."""
    return json.loads(request.body["messages"][-1]["content"])


def asked(model, name: str) -> list:
    """The requests that asked for the answer shape `name`."""
    return [request for request in model.requests if request.body["response_format"]["json_schema"]["name"] == name]


def episode(index, text: str, *, subject: str | None = "anna", result: str = "succeeded", intent: str | None = None, tools=()) -> MemoryRecord:
    """An episode as extraction writes one (R-8.10)."""
    structured = {"result": result, "result_basis": "judge", "intent": intent, "tools": [{"name": name, "status": "ok"} for name in tools]}
    return make_record(index, text, type="episode", subject=subject, structured=structured)


def sections(index, **values) -> MemoryStore:
    """Sets store sections directly (the API is tested on its own): e.g. lessons={"enabled": True}."""
    store = MemoryStore.objects.get(index=index)
    for name, value in values.items():
        setattr(store, name, {**getattr(store, name), **value})
    store.save()
    return store


def improvements_on(organisation) -> None:
    organisation.capabilities = ["improvements"]
    organisation.improvements = {"enabled": True}
    organisation.save()


def promotion_on(index, **labels) -> None:
    improvements_on(index.organisation)
    sections(index, promotion={"enabled": True, "labels": labels})


def touched(record: MemoryRecord, *, minutes_ago: float) -> MemoryRecord:
    """Moves the record's `updated_at` back, as if it changed that long ago (test set-up)."""
    moment = timezone.now() - timedelta(minutes=minutes_ago)
    MemoryRecord.objects.filter(pk=record.pk).update(updated_at=moment)
    record.updated_at = moment
    return record


def state_of(index) -> MaintenanceState:
    return MaintenanceState.objects.get(index=index)
