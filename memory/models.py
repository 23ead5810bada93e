from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models import F, Q
from django.db.models.functions import MD5
from django.utils.translation import gettext_lazy as _
from pgvector.django import HalfVectorField, HnswIndex
from simple_history.models import HistoricalRecords

from core_memory.base.ids import PrefixedIdField
from core_memory.base.tenancy import TenantQuerySet
from core_memory.base.work.models import WorkRun, WorkUnit
from core_memory.llm.embeddings import DIMENSIONS
from stores.configuration import TYPE_LABELS
from stores.models import KnowledgeIndex

# The text-search configurations whose lexemes make up a record's stored vector.
SEARCH_CONFIGS = ("dutch", "english")


def type_label(type_name: str) -> str:
    return TYPE_LABELS.get(type_name, type_name)


def search_vector_expression():
    """Records are written in Dutch AND English, often mixed in one organisation.

    One language's stemmer alone loses the other language's inflections ("facturen"
    and "factuur" only meet under the Dutch stemmer, "invoices"/"invoice" only under
    the English one), and `simple` stems nothing. So the stored vector is the union
    of the Dutch and the English vector of the text; a query word is turned into
    both its Dutch and its English lexeme (memory.search), so either language finds
    its inflections. Accents are not folded (unaccent is not immutable, so it cannot
    live in a generated column without a wrapper function); Dutch text rarely relies
    on them for meaning.
    """
    vector = SearchVector("text", config=SEARCH_CONFIGS[0])
    for config in SEARCH_CONFIGS[1:]:
        vector = vector + SearchVector("text", config=config)
    return vector


def history_user(request=None, **kwargs):
    """The console administrator behind a change, if any.

    An API request's `user` is a key's caller (core_memory.base.callers), not a Django user, so it is not a
    `history_user`; the key id goes into the version's change reason instead.
    """
    user = getattr(request, "user", None)
    return user if isinstance(user, AbstractBaseUser) else None


def unexpired(now) -> Q:
    """Records whose time has not run out at `now` (or that never expire): the only ones a read
    shows or counts unless it asks for expired ones."""
    return Q(expires_at__isnull=True) | Q(expires_at__gt=now)


class MemoryRecordQuerySet(TenantQuerySet):
    # Every read leaves the stored search vector in the database: only SQL matches and ranks
    # on it, and sending it along (two stemmings of the text) would double what a read moves.
    def for_organisation(self, organisation):
        return super().for_organisation(organisation).defer("search_vector")

    def unscoped(self):
        return super().unscoped().defer("search_vector")

    def for_key(self, key):
        """Records the key may address: in an index available to it, not deleted.
        A record is exactly as absent as its index."""
        return (
            self.for_organisation(key.organisation_id)
            .filter(index__in=KnowledgeIndex.objects.for_key(key).values("id"))
            .exclude(status=MemoryRecord.Status.DELETED)
        )


class MemoryRecord(models.Model):
    """One remembered thing.

    `changed_at` is the decay clock: set on creation, PATCH and confirmation.
    `updated_at` is maintenance's clock: it moves with every save that changes what the record
    says or how it stands (written, confirmed, edited, ended, deleted); maintenance's own marks
    (`contested`, saved with `update_fields` that leave it out) and retrievals leave it alone,
    so a run reads only what others changed since the last one.
    `contradicts` is a symmetrical many-to-many to the records maintenance found to
    contradict this one; `contested` is true while it has any. Ending, deleting or
    re-wording either record clears the pair (memory.services).
    Every change goes through `save()` so django-simple-history keeps each version
   ; the historical row's `history_change_reason` is "<what> by <actor>".
    """

    class Status(models.TextChoices):
        ACTIVE = "active", _("active")
        ENDED = "ended", _("ended")
        DELETED = "deleted", _("deleted")

    class Source(models.TextChoices):
        API = "api", _("API")
        TOOL = "tool", _("tool")
        EXTRACTION = "extraction", _("extraction")
        PROMOTION = "promotion", _("promotion")
        MAINTENANCE = "maintenance", _("maintenance")

    id = PrefixedIdField("mem")
    # No index of their own (nor Django's `_like` twins): the composite indexes below lead with
    # them. Every index costs each write, and each retrieval count, an entry.
    organisation = models.ForeignKey(
        "organisations.Organisation", on_delete=models.CASCADE, related_name="memory_records", db_index=False
    )
    index = models.ForeignKey("stores.KnowledgeIndex", on_delete=models.CASCADE, related_name="records", db_index=False)
    subject = models.CharField(_("person"), max_length=255, null=True, blank=True, help_text=_("Empty: shared."))
    type = models.CharField(_("type"), max_length=40)
    text = models.TextField(_("text"))
    normalised_text = models.TextField(editable=False)
    metadata = models.JSONField(_("metadata"), default=dict, blank=True)
    confidence = models.FloatField(_("confidence"), default=1.0)
    status = models.CharField(_("status"), max_length=16, choices=Status.choices, default=Status.ACTIVE)
    confirmations = models.PositiveIntegerField(_("confirmations"), default=0)
    last_confirmed_at = models.DateTimeField(_("last confirmed at"), null=True, blank=True)
    # Indexed only where set (below): few records correct or are corrected.
    replaces = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="corrections", verbose_name=_("replaces"),
        db_index=False,
    )
    replaced_by = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="+", verbose_name=_("replaced by"),
        db_index=False,
    )
    contested = models.BooleanField(_("contested"), default=False)
    contradicts = models.ManyToManyField("self", blank=True, verbose_name=_("contradicts"))
    retrieval_count = models.PositiveIntegerField(_("retrieval count"), default=0)
    source = models.CharField(_("source"), max_length=16, choices=Source.choices, default=Source.API)
    trusted = models.BooleanField(_("trusted"), default=True)
    thread_id = models.CharField(_("thread"), max_length=40, null=True, blank=True)
    item_ids = models.JSONField(_("items"), default=list, blank=True)
    response_id = models.CharField(_("response"), max_length=40, null=True, blank=True)
    due_at = models.DateTimeField(_("due at"), null=True, blank=True)
    # When it stops being true ("until Friday"): from then on no read shows it unless asked for
    # expired records, and maintenance ends it after a grace period. Null: it does not expire.
    expires_at = models.DateTimeField(_("expires at"), null=True, blank=True)
    done = models.BooleanField(_("done"), default=False)
    structured = models.JSONField(_("structured"), null=True, blank=True)
    changed_at = models.DateTimeField(_("changed at"))
    # Where an import found it ("core:mem_…", "mem0:…", "zep:…"): the same file imported again
    # writes nothing twice (docs/portability.md).
    import_source = models.CharField(_("imported from"), max_length=300, null=True, blank=True, editable=False)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)
    search_vector = models.GeneratedField(
        expression=search_vector_expression(), output_field=SearchVectorField(), db_persist=True
    )

    objects = MemoryRecordQuerySet.as_manager()

    # A retrieval is not a change: the count rises with F() outside any version.
    history = HistoricalRecords(
        excluded_fields=["search_vector", "normalised_text", "retrieval_count", "import_source"],
        get_user=history_user,
        # Versions are read by record id (and erased by organisation and person): no index for
        # the other references, which every write would pay for.
        no_db_index=["index", "replaces", "replaced_by"],
    )

    class Meta:
        verbose_name = _("record")
        verbose_name_plural = _("records")
        indexes = [
            models.Index(fields=["index", "subject", "type", "status"], name="memory_index_subject_type"),
            models.Index(
                fields=["index", "subject", "type", "-id"], name="memory_active", condition=Q(status="active")
            ),
            models.Index(fields=["index", "-id"], name="memory_index_id"),
            # The injection walk and the default list order when the reading key sets no
            # half-lives: the top of a person's records without sorting them all. `type`,
            # `organisation` and `expires_at` ride along so that counting what `limit` left out
            # (`dropped_by_count`) reads the index alone: without `expires_at` the count reads every
            # row from the table, and at 1M the shared set's count took most of the block's time.
            models.Index(
                fields=["index", "subject", "-confidence", "-retrieval_count", "id"],
                name="memory_ranked",
                condition=Q(status="active"),
                include=["type", "organisation", "expires_at"],
            ),
            # The same for the shared records. PostgreSQL orders by an index only after columns
            # it knows to be constant, and `subject IS NULL` does not make `subject` one: the
            # shared records need indexes of their own, without the column.
            models.Index(
                fields=["index", "-confidence", "-retrieval_count", "id"],
                name="memory_shared_ranked",
                condition=Q(status="active", subject__isnull=True),
                include=["type", "organisation", "expires_at"],
            ),
            # [commitments]: open ones, soonest due first, hers and the shared ones.
            models.Index(
                fields=["index", "subject", "due_at", "-confidence", "-retrieval_count", "id"],
                name="memory_open_commitments",
                condition=Q(status="active", type="commitment", done=False),
            ),
            models.Index(
                fields=["index", "due_at", "-confidence", "-retrieval_count", "id"],
                name="memory_shared_commitments",
                condition=Q(status="active", type="commitment", done=False, subject__isnull=True),
            ),
            # [behaviour]: her rules, newest first.
            models.Index(
                fields=["index", "subject", "type", "-created_at"], name="memory_newest", condition=Q(status="active")
            ),
            models.Index(fields=["organisation", "subject"], name="memory_org_subject"),
            models.Index(
                fields=["organisation", "import_source"], name="memory_import_source", condition=Q(import_source__isnull=False)
            ),
            models.Index(fields=["replaces"], name="memory_replaces", condition=Q(replaces__isnull=False)),
            # Maintenance ends the active records whose time ran out: few ever expire.
            models.Index(fields=["expires_at"], name="memory_expiring", condition=Q(status="active", expires_at__isnull=False)),
            models.Index(fields=["replaced_by"], name="memory_replaced_by", condition=Q(replaced_by__isnull=False)),
            # Full text within a scope (btree_gin): a person's search reads the entries of her
            # own records only (GIN skips through the rest of a frequent word's postings), and
            # the shared records have their own, smaller index, so neither reads every record of
            # the table that holds a common word. Leaving out `subject` or
            # `index`, the list's `q` and the console search use the first one too.
            GinIndex(fields=["index", "subject", "search_vector"], name="memory_search_scoped"),
            GinIndex(
                fields=["index", "search_vector"],
                name="memory_search_shared",
                condition=Q(status="active", subject__isnull=True),
            ),
            # Maintenance reads what changed since its last run: records are
            # found by when they last changed, never by scanning the store.
            models.Index(fields=["index", "updated_at"], name="memory_index_updated"),
            # Promotion: the persons whose memories hold the same fact in the same way.
            # A digest, since a text may be longer than a btree entry holds.
            models.Index(
                F("index"),
                F("type"),
                MD5("normalised_text"),
                name="memory_personal_same_text",
                condition=Q(status="active", subject__isnull=False),
            ),
        ]
        constraints = [
            # An episode tells of one session: two sessions told in the same words are two
            # episodes, never a confirmation (memory.services.record_write_within).
            models.UniqueConstraint(
                fields=["index", "subject", "type", "normalised_text"],
                condition=Q(status="active") & ~Q(type="episode"),
                nulls_distinct=False,
                name="memory_one_active_per_text",
            ),
            models.CheckConstraint(condition=Q(confidence__gte=0.0, confidence__lte=1.0), name="memory_confidence_0_1"),
            models.CheckConstraint(
                condition=Q(status__in=["active", "ended", "deleted"]), name="memory_status_known"
            ),
        ]

    def __str__(self) -> str:
        return f"{type_label(self.type)}: {self.text[:60]}"

    @property
    def provenance(self) -> dict:
        return {"thread_id": self.thread_id, "item_ids": list(self.item_ids or []), "response_id": self.response_id}


class RecordVectorScope(models.Model):
    """What a record's vector copies from its record, so a search scans the vectors' table alone:
    the scope (organisation, index, person, type, creation time), which a record never changes."""

    organisation = models.ForeignKey(
        "organisations.Organisation", on_delete=models.DO_NOTHING, db_constraint=False, related_name="+"
    )
    index = models.ForeignKey("stores.KnowledgeIndex", on_delete=models.DO_NOTHING, db_constraint=False, related_name="+")
    subject = models.CharField(max_length=255, null=True, blank=True)
    type = models.CharField(max_length=40)
    created_at = models.DateTimeField()

    class Meta:
        abstract = True


class RecordEmbedding(RecordVectorScope):
    """The vector of an active record's text in an index with `embeddings: true`.

    Only where PostgreSQL has pgvector: migration memory.0007 (and `manage.py embed_records`)
    create the table when the `vector` extension exists, and leave it out otherwise, so a
    server without pgvector migrates and runs (memory.embedding.storage). Hence no Django
    relation points here and these point nowhere in Django's eyes (`DO_NOTHING`, no
    constraint, no reverse accessor): deleting a record, an index or an organisation must not
    make Django query a table that may not exist. The database cascades instead (a foreign
    key `ON DELETE CASCADE` to the record, added with the table).

    A row exists only while its record is active and holds the vector of its current text:
    ending, deleting or editing the text removes it, and the embedding task writes the new
    one after commit. The scope (organisation, index, person, type, creation time) is copied
    from the record, which never changes it, so a search scans this table alone.
    `text_digest` is the SHA-256 of the model id and the text embedded.
    """

    record = models.OneToOneField(
        MemoryRecord, primary_key=True, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+"
    )
    model = models.CharField(max_length=100)
    text_digest = models.CharField(max_length=64)
    # Half precision: the model's weights are 4-bit, and the scan reads half the bytes.
    vector = HalfVectorField(dimensions=DIMENSIONS)
    embedded_at = models.DateTimeField()

    objects = TenantQuerySet.as_manager()

    class Meta:
        verbose_name = _("record embedding")
        verbose_name_plural = _("record embeddings")
        indexes = [
            # A person's vectors (and the shared ones) for the exact scan within her scope.
            models.Index(fields=["index", "subject"], name="memory_embedding_scope"),
            # Scopes too large to scan (an index's every record, asked without a person).
            HnswIndex(
                fields=["vector"], name="memory_embedding_hnsw", m=16, ef_construction=64, opclasses=["halfvec_ip_ops"]
            ),
            # The shared records alone, which every person's search reads beside her own: walked
            # in the whole graph, where shared vectors are one in twenty, HNSW found 59% of their
            # nearest at 1M records; in a graph of their own a walk meets nothing it must skip.
            # Built with a wider search for each vector's neighbours (256, pgvector's default 64):
            # at 1M records its walk found 0.93 of the 50 nearest instead of 0.70 (ef_search 100).
            HnswIndex(
                fields=["vector"], name="memory_embedding_shared_hnsw", m=16, ef_construction=256,
                opclasses=["halfvec_ip_ops"], condition=Q(subject__isnull=True),
            ),
        ]


class ModelEmbedding(RecordVectorScope):
    """The vector of an active record's text by an embedding model served elsewhere
    (CORE_EMBEDDING_MODELS), filed under the model's *space* (its id and dimensions).

    As `RecordEmbedding` (the in-process model's, of one dimension): created only where
    PostgreSQL has pgvector, no Django relation in or out, the scope copied from the record, the
    database cascading a record's deletion. Unlike it, one table holds every such model: the
    column has no fixed dimension, and each space has an HNSW graph of its own, a partial index
    over the vectors cast to its dimension (memory.embedding.storage.space_graph_ensure), which a
    search of that space walks. A record may hold a vector in two spaces at once: its index's
    model's and, while the index switches, the next model's.
    """

    id = models.BigAutoField(primary_key=True)
    record = models.ForeignKey(MemoryRecord, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+")
    space = models.CharField(max_length=120)
    text_digest = models.CharField(max_length=64)
    vector = HalfVectorField()
    embedded_at = models.DateTimeField()

    objects = TenantQuerySet.as_manager()

    class Meta:
        verbose_name = _("record embedding by a model served elsewhere")
        verbose_name_plural = _("record embeddings by models served elsewhere")
        constraints = [models.UniqueConstraint(fields=["record", "space"], name="memory_model_embedding_once")]
        indexes = [models.Index(fields=["index", "space", "subject"], name="memory_model_embedding_scope")]


class EmbeddingSwitchRun(WorkRun):
    """One planning of an index's switch to its next embedding model: the batches of its records
    still without that model's vector, and how many the batches embedded. `pending` counts the
    batches not yet finished; the last to finish closes the run, and the switch completes when
    no active record is left without the next model's vector."""

    id = PrefixedIdField("erun")
    index = models.ForeignKey(KnowledgeIndex, on_delete=models.CASCADE, related_name="embedding_switch_runs")
    # The model the index is switching to.
    model = models.CharField(_("embedding model"), max_length=100)
    records = models.PositiveIntegerField(_("records to embed"), default=0)
    embedded = models.PositiveIntegerField(_("records embedded"), default=0)

    objects = TenantQuerySet.as_manager()

    class Meta:
        verbose_name = _("embedding switch run")
        verbose_name_plural = _("embedding switch runs")
        indexes = [models.Index(fields=["index", "-started_at"], name="embedding_switch_run_latest")]


class EmbeddingBatch(WorkUnit):
    """A unit of durable work (core_memory.base.work): some records of an index embedded by the
    model the index is switching to, in one call to that model. `record_ids` are the records it
    was planned for; a record ended, edited or already embedded since is left out when it runs.
    `written` (WorkUnit) counts the vectors it stored."""

    class Status(models.TextChoices):
        QUEUED = "queued", _("queued")
        RUNNING = "running", _("running")
        DONE = "done", _("done")
        FAILED = "failed", _("failed")
        CANCELLED = "cancelled", _("cancelled")

    id = PrefixedIdField("ebat")
    index = models.ForeignKey(KnowledgeIndex, on_delete=models.CASCADE, related_name="embedding_batches")
    run = models.ForeignKey(EmbeddingSwitchRun, on_delete=models.SET_NULL, null=True, blank=True, related_name="batch_set")
    model = models.CharField(_("embedding model"), max_length=100)
    record_ids = models.JSONField(_("records"), default=list)
    status = models.CharField(_("status"), max_length=16, choices=Status.choices, default=Status.QUEUED)

    objects = TenantQuerySet.as_manager()

    class Meta:
        verbose_name = _("embedding batch")
        verbose_name_plural = _("embedding batches")
        indexes = [
            models.Index(fields=["index", "status"], name="embedding_batch_status"),
            models.Index(fields=["status", "lease_until"], name="embedding_batch_stale", condition=Q(status__in=["queued", "running"])),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["queued", "running", "done", "failed", "cancelled"]), name="embedding_batch_status_known"
            ),
        ]


class SharedSetVersion(models.Model):
    """How often an index's shared records changed in what a full-text search ranks them by:
    one added, deleted, ended or corrected, or its text, type or time changed. PostgreSQL
    raises it (triggers on the records' table, whoever writes: a service, the console, an
    import, plain SQL), in the writing transaction; a retrieval count or a confirmation leaves
    it alone. A process that keeps the shared records' full-text matches between searches
    (memory.search.shared) uses them only at the version it read them at, checked in the
    search's own statement. No row: no shared record has changed since the triggers were made.

    `DO_NOTHING` without a Django constraint: Django need not query this table when an index
    or an organisation goes; the database cascades (foreign keys added by the migration).
    """

    index = models.OneToOneField(
        "stores.KnowledgeIndex", primary_key=True, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+"
    )
    organisation = models.ForeignKey(
        "organisations.Organisation", on_delete=models.DO_NOTHING, db_constraint=False, related_name="+", db_index=False
    )
    version = models.BigIntegerField(default=0)

    objects = TenantQuerySet.as_manager()
