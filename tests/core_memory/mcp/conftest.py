"""A real gunicorn serving core_memory.wsgi (so `/mcp` through a2wsgi) on the test database,
and a helper that runs the SDK's async client in a thread of its own (no event loop of
another test — Playwright's, pytest's — can be in its way)."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import quote

import anyio
import pytest
from django.db import connection

PROJECT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent


def database_url() -> str:
    """The test database as a URL, for processes this test starts."""
    database = connection.settings_dict
    credentials = quote(database["USER"] or "postgres") + (f":{quote(database['PASSWORD'])}" if database["PASSWORD"] else "")
    port = f":{database['PORT']}" if database["PORT"] else ""
    return f"postgres://{credentials}@{quote(database['HOST'] or '', safe='')}{port}/{database['NAME']}"


def child_environment(**extra: str) -> dict[str, str]:
    environment = {name: value for name, value in os.environ.items() if name not in {"CORE_MCP_TOKEN", "CORE_MCP_SUBJECT"}}
    return {**environment, "DATABASE_URL": database_url(), "DJANGO_SETTINGS_MODULE": "core_memory.settings", **extra}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def site(django_db_setup, django_db_blocker):
    port = free_port()
    with django_db_blocker.unblock():
        environment = child_environment()
    process = subprocess.Popen(
        [str(BIN / "gunicorn"), "core_memory.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", "2", "--no-control-socket"],
        cwd=PROJECT,
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{base}/v1/schema", timeout=2):
                break
        except OSError:
            assert process.poll() is None, process.stderr.read()
            time.sleep(0.2)
    yield base
    process.terminate()
    process.wait(timeout=30)


def run_async(function, *args):
    """Runs `function(*args)` (a coroutine function) to completion on a loop in a fresh thread."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(anyio.run, function, *args).result(timeout=120)
