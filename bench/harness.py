"""What every bench needs, imported first: Django set up with the project's settings and
the chattiest loggers quiet, and a scratch database on the configured server.

    from harness import scratch_database  # sets Django up; import the project after it

    with scratch_database("bench_name") as name:
        ...

`model_time_measured()` times every chat-model call into `MODEL_SECONDS`, so a bench can
report Core's own time: its wall time minus the time inside the provider's `complete`.
"""
from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "core_memory.settings")

import django  # noqa: E402

django.setup()
for noisy in ("httpx", "core_memory.llm.providers", "core_memory.llm.openai"):
    logging.getLogger(noisy).setLevel(logging.WARNING)

from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402

from core_memory.llm import openai  # noqa: E402


def clock_at(moment: datetime):
    """Django's clock stopped at `moment` for what runs inside it (a write at its turn's time)."""
    return mock.patch("django.utils.timezone.now", return_value=moment)


def api_post(client, path: str, body: dict, *, expect: tuple[int, ...]) -> dict:
    """POST `body` as JSON and answer the response's JSON; any other status than `expect` stops the bench."""
    response = client.post(path, body, format="json")
    if response.status_code not in expect:
        raise RuntimeError(f"{path} answered {response.status_code}: {response.content[:300]!r}")
    return response.json()


@contextmanager
def scratch_database(name: str) -> Iterator[str]:
    """A database called `name`, migrated, used by the default connection, dropped afterwards."""
    settings.DATABASES["default"]["TEST"] = {**settings.DATABASES["default"].get("TEST", {}), "NAME": name}
    old_name = connection.settings_dict["NAME"]
    scratch = connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        yield scratch
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


MODEL_SECONDS: list[float] = []


def model_time_measured() -> None:
    """From now on every call of the OpenAI provider's `complete` (the HTTP round trip to the
    model and reading its answer) adds its seconds to `MODEL_SECONDS`."""
    complete = openai.OpenAIChatProvider.complete

    def timed(self, **arguments):
        started = time.perf_counter()
        try:
            return complete(self, **arguments)
        finally:
            MODEL_SECONDS.append(time.perf_counter() - started)

    openai.OpenAIChatProvider.complete = timed


RESULTS = ROOT / "bench" / "RESULTS.md"


def results_markers(name: str) -> tuple[str, str]:
    return f"<!-- {name}:begin -->", f"<!-- {name}:end -->"


def results_write(*, name: str, section: str) -> None:
    """Put `section` (which opens and closes with `results_markers(name)`) into bench/RESULTS.md,
    replacing that bench's earlier section and leaving every other one as it is."""
    begin, end = results_markers(name)
    existing = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
    if begin in existing and end in existing:
        before, rest = existing.split(begin, 1)
        RESULTS.write_text(before + section + rest.split(end, 1)[1])
    else:
        RESULTS.write_text(existing.rstrip("\n") + "\n\n" + section + "\n")
