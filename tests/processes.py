"""Real processes for the tests that need them (gunicorn, Celery workers, `manage.py mcp`): the
test database as a URL they can use, a free port, waiting until a server answers."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import quote

from django.db import connection

PROJECT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def database_url() -> str:
    """The test database as a URL, for processes a test starts."""
    database = connection.settings_dict
    credentials = quote(database["USER"] or "postgres") + (f":{quote(database['PASSWORD'])}" if database["PASSWORD"] else "")
    port = f":{database['PORT']}" if database["PORT"] else ""
    return f"postgres://{credentials}@{quote(database['HOST'] or '', safe='')}{port}/{database['NAME']}"


def child_environment(**extra: str) -> dict[str, str]:
    environment = {name: value for name, value in os.environ.items() if name not in {"CORE_MCP_TOKEN", "CORE_MCP_SUBJECT"}}
    # A server's many refusals in a test (a missing or revoked key) come from one address.
    defaults = {"CORE_RATE_LIMIT_ANONYMOUS_PER_MINUTE": "1000000"}
    return {**environment, **defaults, "DATABASE_URL": database_url(), "DJANGO_SETTINGS_MODULE": "core_memory.settings", **extra}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def gunicorn_start(*, environment: dict[str, str], workers: int = 1) -> tuple[subprocess.Popen, str]:
    """gunicorn serving core_memory.wsgi (Django and `/mcp`) as `make run` does; (process, base URL)."""
    port = free_port()
    process = subprocess.Popen(
        [str(BIN / "gunicorn"), "core_memory.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", str(workers), "--no-control-socket"],
        cwd=PROJECT,
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    return process, f"http://127.0.0.1:{port}"


def wait_until_answering(process: subprocess.Popen, base: str, *, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            # The schema takes seconds to build on a busy machine: a short probe would never see it.
            with urllib.request.urlopen(f"{base}/v1/schema", timeout=15):
                return
        except OSError:
            if process.poll() is not None:
                raise RuntimeError(f"the server ended: {process.stderr.read()}") from None
            time.sleep(0.2)
    raise TimeoutError(f"{base} did not answer in {timeout} s")


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
