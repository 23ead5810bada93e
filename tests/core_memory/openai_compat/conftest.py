"""The OpenAI-compatible surface tried as an app would: a real gunicorn serving Core on the test
database, a fake chat model speaking the real protocol over HTTP behind it, and the official
clients (the `openai` SDK, LangChain's ChatOpenAI) pointed at `/openai/v1`.

Each test gets an organisation whose key injects the memory of one index and offers both memory
tools, and a record of Anna's there: an app changes only its base URL and key to get it."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass

import httpx
import pytest

from core_memory.base.callers import Caller
from core_memory.keys.models import ApiKey
from memory.models import MemoryRecord
from memory.services.writes import RecordDraft, record_write
from tests.factories import OrganisationFactory, make_index, make_key, resolved_for
from tests.fake_model import FakeChatModel
from tests.processes import child_environment, gunicorn_start, stop

ANNA_RECORD = "Anna wil facturen per e-mail."


@pytest.fixture(scope="module")
def chat_model():
    with FakeChatModel() as model:
        yield model


@pytest.fixture(scope="module")
def site(django_db_setup, django_db_blocker, chat_model):
    with django_db_blocker.unblock():
        environment = child_environment(
            CORE_MODELS=json.dumps([chat_model.config("fake-chat"), chat_model.config("other-chat")]),
            CORE_RATE_LIMIT_PER_MINUTE="1000000",
        )
    process, base = gunicorn_start(environment=environment, workers=2)
    try:
        _wait_until_answering(process, base)
        yield base
    finally:
        stop(process)


def _wait_until_answering(process, base: str, *, timeout: float = 300) -> None:
    """Any answer of the API will do (a 401 without a key): the API document the shared helper
    asks for takes longer to make than its probe waits on a busy machine."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            httpx.get(f"{base}/openai/v1/models", timeout=10)
            return
        except httpx.HTTPError:
            if process.poll() is not None:
                raise RuntimeError(f"the server ended: {process.stderr.read()}") from None
            time.sleep(0.5)
    raise TimeoutError(f"{base} did not answer in {timeout} s")


@pytest.fixture
def model(chat_model):
    """The fake model, its script and its record of requests empty for this test."""
    chat_model.requests.clear()
    chat_model._script.clear()
    yield chat_model
    chat_model._script.clear()


@dataclass
class App:
    organisation: object
    key: ApiKey
    secret: str
    index: object
    base_url: str

    def records(self, **filters) -> list[tuple]:
        return list(
            MemoryRecord.objects.for_organisation(self.organisation.id)
            .filter(**filters)
            .order_by("id")
            .values_list("subject", "type", "text", "source")
        )


def make_app(site: str, **key_fields) -> App:
    organisation = OrganisationFactory()
    index = make_index(organisation, name="klanten")
    memory = {"retrieval_tool": True, "write_tool": True, "injection": {"enabled": True, "index_id": index.id}}
    key, secret = make_key(organisation, name="app", memory=memory, **key_fields)
    resolved = resolved_for(key, index)
    record_write(caller=Caller(key=key, subject="anna", actor="test"), index=resolved, draft=RecordDraft(type="preference", text=ANNA_RECORD))
    return App(organisation=organisation, key=key, secret=secret, index=resolved, base_url=f"{site}/openai/v1")


@pytest.fixture
def app(transactional_db, site) -> App:
    return make_app(site)
