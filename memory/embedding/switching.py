"""An index switching its embedding model: its records embedded by the next model in the
background, while its searches keep comparing the vectors of the model it has; once every
active record has the next model's vector, the index takes that model in one transaction and
the old vectors go. A search therefore never finds less during a switch.

The embedding is durable work (core_memory.base.work), as extraction's windows and
maintenance's jobs are:

- Planning (`SwitchDispatcher`, on beat every minute and at once after the switch is asked):
  under a row lock on the index, a run (`EmbeddingSwitchRun`) queues the records still without
  the next model's vector in batches (`EmbeddingBatch`, `BATCH` records, one call to the model
  each). An index with a run still going is not planned again; its batches left behind by a
  dead worker are handed out again when their claim runs out. A run that ended with failed
  batches (the model's server down) is followed by the next after `RETRY`, doubling with every
  such run in a row up to `RETRY_MOST`.
- A batch (`BatchRunner`): claimed with a token and a lease; its records still active and not yet
  embedded by the model are embedded outside any transaction, and stored in the transaction that
  locks the batch by its token, so a worker killed mid-batch stores nothing twice and loses
  nothing. A batch of an index no longer switching to its model is cancelled.
- Completion (`index_switch_complete`): when a run's last batch finishes, and whenever planning
  finds nothing left to embed.

Records written meanwhile are embedded by both models (memory.embedding.services). Embedding
does not count against the organisation's monthly token limit, which meters the chat models
(docs/decisions.md).
"""
from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Exists, OuterRef, QuerySet
from django.utils import timezone

from audit.services import audit_event_record
from core_memory.base.callers import Caller
from core_memory.base.work.claims import CANCELLED
from core_memory.base.work.dispatch import Dispatch, Dispatcher
from core_memory.base.work.runner import End, WorkFailed, WorkRunner, WorkStopped
from core_memory.llm.embedding_models import EmbeddingModel, embedding_model_for
from core_memory.llm.protocol import ProviderError
from memory.embedding.selectors import model_vectors
from memory.embedding.services import VectorsDue, records_embeddable, vectors_due, vectors_embed, vectors_store
from memory.models import EmbeddingBatch, EmbeddingSwitchRun, MemoryRecord
from stores.models import KnowledgeIndex

logger = logging.getLogger(__name__)

ACTOR = "core:embeddings"
BATCH = 64
# How long a batch's claim lasts: its task's hard time limit (a model's retries included).
LEASE = timedelta(minutes=5)
MAX_ATTEMPTS = 3
# The wait after a run whose batches failed, doubled for every such run in a row.
RETRY = timedelta(minutes=5)
RETRY_MOST = timedelta(hours=6)


@dataclass(frozen=True)
class SwitchProgress:
    model: str
    embedded: int
    records: int


def _active_records(index: KnowledgeIndex):
    return MemoryRecord.objects.for_organisation(index.organisation_id).filter(index_id=index.pk, status=MemoryRecord.Status.ACTIVE)


def index_switch_progress(*, index: KnowledgeIndex) -> SwitchProgress | None:
    """How far the index's switch to its next model is (None: it is not switching). Two counts."""
    if not index.embedding_model_next:
        return None
    model = embedding_model_for(index.embedding_model_next)
    records = _active_records(index).count()
    embedded = model_vectors(index=index, model=model).filter(record__status=MemoryRecord.Status.ACTIVE).count() if model else 0
    return SwitchProgress(model=index.embedding_model_next, embedded=embedded, records=records)


def _missing(index: KnowledgeIndex, model: EmbeddingModel) -> QuerySet[MemoryRecord]:
    """The index's active records without a vector by `model`."""
    return _active_records(index).filter(~Exists(model_vectors(index=index, model=model).filter(record_id=OuterRef("pk"))))


@dataclass(frozen=True)
class SwitchPlan:
    """What planning one index did. `state`: `planned` (a run with batches), `complete` (nothing
    left to embed: the index took its next model), `not_switching`, `model_unavailable` (its next
    model is not configured now) or `missing` (no such live index)."""

    index_id: str
    state: str
    run_id: str | None = None
    batch_ids: list[str] = field(default_factory=list)
    records: int = 0

    @property
    def unit_ids(self) -> list[str]:
        return self.batch_ids


def _retry_after(runs: QuerySet[EmbeddingSwitchRun]) -> timedelta | None:
    """How long after the last run the next may start: None when it did not fail."""
    failed = 0
    for errors in runs.order_by("-started_at").values_list("errors", flat=True)[:12]:
        if not errors:
            break
        failed += 1
    return None if not failed else min(RETRY_MOST, RETRY * 2 ** (failed - 1))


@transaction.atomic(durable=True)
def _switch_planned(*, index_id: str, now: datetime, force: bool) -> SwitchPlan | None:
    index = KnowledgeIndex.objects.unscoped().live().select_for_update().filter(pk=index_id).first()
    if index is None:
        return SwitchPlan(index_id=index_id, state="missing")
    if not index.embedding_model_next:
        return SwitchPlan(index_id=index_id, state="not_switching")
    runs = EmbeddingSwitchRun.objects.for_organisation(index.organisation_id).filter(index_id=index_id, model=index.embedding_model_next)
    if runs.filter(finished_at__isnull=True).exists():
        # A run still going: its batches left behind are handed out again (`recover`).
        return None
    last = runs.order_by("-started_at").first()
    wait = _retry_after(runs)
    if not force and wait is not None and last.finished_at is not None and last.finished_at + wait > now:
        return None
    model = embedding_model_for(index.embedding_model_next)
    if model is None:
        return SwitchPlan(index_id=index_id, state="model_unavailable")
    record_ids = list(_missing(index, model).order_by("id").values_list("id", flat=True))
    if not record_ids:
        return SwitchPlan(index_id=index_id, state="complete")
    clock = timezone.now()
    run = EmbeddingSwitchRun.objects.create(
        organisation_id=index.organisation_id, index=index, model=model.id, started_at=now, records=len(record_ids)
    )
    batches = [
        EmbeddingBatch(
            organisation_id=index.organisation_id, index=index, run=run, model=model.id, record_ids=record_ids[start : start + BATCH],
            queued_at=clock,
        )
        for start in range(0, len(record_ids), BATCH)
    ]
    EmbeddingBatch.objects.bulk_create(batches)
    batch_ids = [batch.pk for batch in batches]
    run.planned(batch_ids, now=now)
    logger.info("embedding.switch.planned", extra={"index": index_id, "run": run.pk, "records": len(record_ids), "batches": len(batch_ids)})
    return SwitchPlan(index_id=index_id, state="planned", run_id=run.pk, batch_ids=batch_ids, records=len(record_ids))


def index_switch_plan(*, index_id: str, now: datetime | None = None, force: bool = False) -> SwitchPlan | None:
    """Plans the index's switch (the module's docstring) in its own transaction; None when it is
    not due (a run still going, or waiting after failures, unless `force`). An index with nothing
    left to embed takes its next model at once."""
    plan = _switch_planned(index_id=index_id, now=now or timezone.now(), force=force)
    if plan is not None and plan.state == "complete":
        index_switch_complete(index_id=index_id, model_id=KnowledgeIndex.objects.unscoped().get(pk=index_id).embedding_model_next)
    return plan


class SwitchDispatcher(Dispatcher):
    events = "embedding.switch.batches"

    def lease(self) -> timedelta:
        return LEASE

    def due(self, now: datetime) -> list[str]:
        return embedding_switches_pending()

    def plan(self, *, index_id: str, now: datetime, force: bool) -> SwitchPlan | None:
        return index_switch_plan(index_id=index_id, now=now, force=force)

    def recoverable(self, index_ids: list[str] | None) -> QuerySet:
        """Batches of live indexes."""
        batches = EmbeddingBatch.objects.unscoped().filter(index__deleted_at__isnull=True)
        return batches if index_ids is None else batches.filter(index_id__in=index_ids)


DISPATCHER = SwitchDispatcher()


def embedding_switches_dispatch(*, now: datetime | None = None, index_ids: list[str] | None = None) -> Dispatch:
    """Plans every switching index — or those of `index_ids`, due or not — and recovers batches
    left behind."""
    return DISPATCHER.dispatch(now=now, index_ids=index_ids)


@dataclass(frozen=True)
class BatchOutcome:
    """What became of one attempt to run a batch: its status after it, or `skipped` when this
    attempt did not claim it."""

    batch_id: str
    index_id: str | None
    status: str
    error_code: str = ""
    embedded: int = 0


class BatchRunner(WorkRunner):
    unit_model = EmbeddingBatch
    run_model = EmbeddingSwitchRun
    noun = "batch"
    events = "embedding.switch.batch"
    done_status = EmbeddingBatch.Status.DONE
    max_attempts = MAX_ATTEMPTS
    related = ("index",)

    def lease(self) -> timedelta:
        return LEASE

    def owner(self, unit: EmbeddingBatch, now: datetime) -> KnowledgeIndex:
        return unit.index

    def prepare(self, unit: EmbeddingBatch, owner: KnowledgeIndex, now: datetime) -> VectorsDue:
        if owner.deleted_at is not None or owner.embedding_model_next != unit.model:
            raise WorkStopped(CANCELLED, "switch_stopped")
        model = embedding_model_for(unit.model)
        if model is None:
            raise WorkFailed("model_unavailable", f"The embedding model {unit.model} is not configured.")
        records = records_embeddable(unit.record_ids).filter(index_id=unit.index_id)
        return vectors_due(model, list(records))

    def asks(self, prepared: VectorsDue) -> bool:
        return bool(prepared.stale)

    def limit_reached(self, unit: EmbeddingBatch, owner: KnowledgeIndex, now: datetime) -> bool:
        # The monthly token limit meters the chat models; vectors are not counted against it.
        return False

    def ask(self, unit: EmbeddingBatch, owner: KnowledgeIndex, prepared: VectorsDue, now: datetime):
        try:
            return vectors_embed(prepared), None
        except ProviderError as error:
            code = error.code if error.code in self.model_failure_codes else "model_error"
            raise WorkFailed(code, error.message) from error

    def write(self, unit: EmbeddingBatch, prepared: VectorsDue, answer, now: datetime) -> Mapping[str, int]:
        return {"written": vectors_store(prepared, answer)}

    def run_counts(self, unit: EmbeddingBatch, end: End) -> Mapping[str, int]:
        return {"embedded": end.counts.get("written", 0)}

    def outcome(self, unit_id: str, unit: EmbeddingBatch | None, end: End | None) -> BatchOutcome:
        index_id = unit.index_id if unit is not None else None
        if end is None:
            return BatchOutcome(batch_id=unit_id, index_id=index_id, status="skipped")
        return BatchOutcome(batch_id=unit_id, index_id=index_id, status=end.status, error_code=end.code, embedded=end.counts.get("written", 0))


RUNNER = BatchRunner()


def embedding_batch_run(*, batch_id: str, now: datetime | None = None) -> BatchOutcome:
    """Runs one batch if it is there to be run; safe to call any number of times, from any
    number of workers (only a claim runs it). The run's last batch completes the switch when
    every active record has the next model's vector."""
    outcome = RUNNER.run(unit_id=batch_id, now=now)
    if outcome.status == "skipped" or outcome.index_id is None:
        return outcome
    batch = EmbeddingBatch.objects.unscoped().select_related("run").filter(pk=batch_id).first()
    if batch is None or batch.run is None or batch.run.finished_at is None:
        return outcome
    index_switch_complete(index_id=outcome.index_id, model_id=batch.model)
    return outcome


@transaction.atomic(durable=True)
def index_switch_complete(*, index_id: str, model_id: str) -> bool:
    """The index takes `model_id` if it is still switching to it and every active record has its
    vector; its former model's vectors are deleted. Audited as `index.embedding_model_switched`."""
    index = KnowledgeIndex.objects.unscoped().live().select_for_update().filter(pk=index_id).first()
    if index is None or index.embedding_model_next != model_id:
        return True
    model = embedding_model_for(model_id)
    if model is None:
        return False
    # Under the index's lock a write may still add a record; it is embedded by both models.
    missing = _missing(index, model).count()
    if missing:
        logger.warning("embedding.switch.incomplete", extra={"index": index_id, "model": model_id, "missing": missing})
        return False
    former = embedding_model_for(index.embedding_model)
    previous = index.embedding_model
    index.embedding_model, index.embedding_model_next = model_id, None
    index.save(update_fields=["embedding_model", "embedding_model_next"])
    if former is not None and former.space != model.space:
        model_vectors(index=index, model=former).delete()
    audit_event_record(
        caller=Caller.system(organisation_id=index.organisation_id, actor=ACTOR), action="index.embedding_model_switched", target=index.pk,
        details={"from": previous, "to": model_id},
    )
    logger.info("embedding.switch.done", extra={"index": index_id, "model": model_id})
    return True


def embedding_switches_pending() -> list[str]:
    """The live indexes switching their embedding model, of every organisation."""
    return list(KnowledgeIndex.objects.unscoped().live().filter(embedding_model_next__isnull=False).values_list("id", flat=True))
