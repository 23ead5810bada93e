"""What the speed benches use to drive a real server: gunicorn started as `make run` starts it,
a small asyncio HTTP client, and percentiles.

The client speaks just enough HTTP/1.1 for our API (a JSON body with Content-Length;
gunicorn's sync workers close every connection after the answer), so one Python process
can keep many requests in flight and costs the measured server little CPU.
"""
from __future__ import annotations

import asyncio
import json
import math
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from scripts.run import procfile_entries

ROOT = Path(__file__).resolve().parent.parent


def percentile(values: Sequence[float], share: float) -> float:
    """The nearest-rank percentile (`share` 0..1) of the values."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes
    started: float  # time.monotonic() when the request was sent (before connecting)
    seconds: float

    def json(self):
        return json.loads(self.body)


class Api:
    """Requests to a server at host:port with a bearer secret."""

    def __init__(self, *, host: str, port: int, secret: str):
        self.host, self.port = host, port
        self.headers = f"Host: {host}:{port}\r\nAuthorization: Bearer {secret}\r\nConnection: close\r\n"

    async def call(self, method: str, path: str, body=None, *, subject: str | None = None, headers: dict | None = None) -> Answer:
        payload = b"" if body is None else json.dumps(body).encode()
        extra = "".join(f"{name}: {value}\r\n" for name, value in (headers or {}).items())
        if subject is not None:
            extra += f"X-Core-Subject: {subject}\r\n"
        if body is not None:
            extra += f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
        request = f"{method} {path} HTTP/1.1\r\n{self.headers}{extra}\r\n".encode() + payload
        started = time.monotonic()
        reader, writer = await asyncio.open_connection(self.host, self.port)
        try:
            writer.write(request)
            raw = await reader.read()  # the server closes the connection after the answer
        finally:
            writer.close()
        seconds = time.monotonic() - started
        head, _, content = raw.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1]) if head else 0
        return Answer(status=status, body=content, started=started, seconds=seconds)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def database_url_for(name: str) -> str:
    """The configured server's URL (DATABASE_URL, else the embedded one) with database `name`."""
    url = os.environ.get("DATABASE_URL")
    if not url:
        from core_memory import embedded

        url = embedded.database_url()
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


class Server:
    """The Procfile's `web` process (gunicorn, as `make run` starts it) on a database of our choice."""

    def __init__(self, *, database: str, environment: dict[str, str] | None = None, log: Path | None = None, root: Path = ROOT):
        """`root`: the checkout whose code the server runs (another worktree, to compare in one run)."""
        self.root = root
        self.port = free_port()
        self.log_path = log or ROOT / "var" / "bench" / "gunicorn.log"
        self.environment = {
            **os.environ,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "DATABASE_URL": database_url_for(database),
            "CORE_DEVELOPMENT": "true",
            "HOST": "127.0.0.1",
            "PORT": str(self.port),
            # One key sends every request of a bench: its organisation may ask without limit.
            "CORE_RATE_LIMIT_PER_MINUTE": "1000000000",
            **(environment or {}),
        }
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> Server:
        command = dict(procfile_entries(self.root / "Procfile"))["web"]
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log = self.log_path.open("w")
        self.process = subprocess.Popen(
            ["/bin/sh", "-c", f"exec {command}"], cwd=self.root, env=self.environment, stdout=self.log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"gunicorn ended at start; see {self.log_path}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=2) as answer:
                    if answer.status == 200:
                        return self
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"gunicorn did not answer /healthz; see {self.log_path}")

    @property
    def workers(self) -> list[int]:
        """The worker processes' ids (for profiling them)."""
        found = subprocess.run(["pgrep", "-P", str(self.process.pid)], capture_output=True, text=True).stdout.split()
        return [int(pid) for pid in found]

    def __exit__(self, *exc) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, 9)
            self.process.wait()
        self.log.close()


