import json
import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from core_memory.llm.embeddings import PGVECTOR_MISSING, embeddings_enabled
from memory.embedding.selectors import embeddable_record_ids, embedding_indexes
from memory.embedding.services import record_embeddings_refresh
from memory.embedding.storage import embedding_storage_ensure
from memory.models import MemoryRecord


class Command(BaseCommand):
    help = (
        "Give every active record of the indexes that embed its current vector: a backfill after "
        "switching embeddings on or installing pgvector, and after a model change. Records whose vector is "
        "current are skipped. Prints progress on stderr and a JSON summary on stdout."
    )

    def add_arguments(self, parser):
        parser.add_argument("--index", action="append", dest="index_ids", metavar="idx_…", help="Only this index (repeatable).")
        parser.add_argument("--batch", type=int, default=64, help="Records embedded per step (default 64).")

    def handle(self, *args, index_ids, batch, **options):
        if not embeddings_enabled() and not settings.CORE_EMBEDDING_MODELS:
            raise CommandError("CORE_EMBEDDINGS is off and CORE_EMBEDDING_MODELS empty: there is nothing to embed with.")
        if batch < 1:
            raise CommandError("--batch must be 1 or more.")
        if not embedding_storage_ensure():
            raise CommandError(f"Vectors cannot be stored: {PGVECTOR_MISSING}")
        indexes = embedding_indexes(index_ids=index_ids)
        if index_ids is not None:
            unknown = sorted(set(index_ids) - set(indexes.values_list("id", flat=True)))
            if unknown:
                raise CommandError(f"Not a live index with embeddings on: {', '.join(unknown)}.")
        total = MemoryRecord.objects.unscoped().filter(index__in=indexes, status=MemoryRecord.Status.ACTIVE).count()
        started = time.monotonic()
        done = embedded = unchanged = skipped = failed = 0
        for record_ids in embeddable_record_ids(indexes=indexes, batch=batch):
            outcome = record_embeddings_refresh(record_ids=record_ids)
            done += len(record_ids)
            embedded += outcome.embedded
            unchanged += outcome.unchanged
            skipped += outcome.skipped
            failed += outcome.failed
            self.stderr.write(
                f"embed_records: {done}/{total} records, {embedded} embedded, {unchanged} unchanged "
                f"({time.monotonic() - started:.1f} s)"
            )
        summary = {
            "indexes": indexes.count(),
            "records": done,
            "embedded": embedded,
            "unchanged": unchanged,
            "skipped": skipped,
            # Records whose model served elsewhere failed: nothing stored; run the command again.
            "failed": failed,
            "seconds": round(time.monotonic() - started, 1),
        }
        self.stdout.write(json.dumps(summary))
