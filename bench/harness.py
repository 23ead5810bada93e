"""What every bench needs, imported first: Django set up with the project's settings and
the chattiest loggers quiet, and a scratch database on the configured server.

    from harness import scratch_database  # sets Django up; import the project after it

    with scratch_database("bench_name") as name:
        ...
"""
from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "core_memory.settings")

import django  # noqa: E402

django.setup()
for noisy in ("httpx", "core_memory.llm.providers", "core_memory.llm.openai"):
    logging.getLogger(noisy).setLevel(logging.WARNING)

from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402


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
