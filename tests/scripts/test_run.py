"""`make run` starts and stops as a process manager expects (R-1.1, issue 14): a signal to
`make` itself stops every process it started, the embedded database last, and no orphan
survives. Real processes: make, the embedded PostgreSQL, gunicorn, a Celery worker and beat."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _descendants(root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found, todo = set(), [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.fixture(scope="module")
def data_dir():
    """Its own embedded database, broker folder and static files: `make test`'s own database
    (under var/) must not be the one this test stops. Not under pytest's temporary folder: that
    is private to root, and the embedded server runs as its own user when started by root."""
    folder = Path(tempfile.mkdtemp(prefix="core-make-run-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _start(data_dir: Path) -> tuple[subprocess.Popen, int, Path]:
    port = _free_port()
    environment = {name: value for name, value in os.environ.items() if name not in {"DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "MAKEFLAGS", "MFLAGS", "MAKELEVEL"}}
    environment |= {"CORE_DATA_DIR": str(data_dir), "PORT": str(port), "WEB_CONCURRENCY": "1", "CELERY_CONCURRENCY": "1"}
    log = data_dir / f"make-run-{port}.log"
    make = subprocess.Popen(
        ["make", "run"],
        cwd=PROJECT,
        env=environment,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as answer:
                if answer.status == 200 and "worker ready" in _worker_ready(log):
                    return make, port, log
        except OSError:
            pass
        assert make.poll() is None, log.read_text()
        time.sleep(0.5)
    make.kill()
    pytest.fail(f"make run did not become healthy:\n{log.read_text()}")


def _worker_ready(log: Path) -> str:
    return "worker ready" if "celery@" in log.read_text() and " ready." in log.read_text() else ""


def _postmaster_pid(data_dir: Path) -> int:
    return int((data_dir / "postgres" / "postmaster.pid").read_text().split()[0])


@pytest.mark.parametrize(
    "how",
    [
        # What a process manager does: SIGTERM to the main process only.
        pytest.param(lambda make: os.kill(make.pid, signal.SIGTERM), id="sigterm-to-make"),
        # What Ctrl-C in a terminal does: SIGINT to the foreground process group.
        pytest.param(lambda make: os.killpg(make.pid, signal.SIGINT), id="ctrl-c"),
    ],
)
def test_a_signal_to_make_stops_every_process_and_the_database_last(data_dir, how):
    """R-1.1: nothing `make run` started outlives it, and the database outlives the rest."""
    make, port, log = _start(data_dir)
    started = _descendants(make.pid)
    postmaster = _postmaster_pid(data_dir)
    commands = " ".join(Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ") for pid in started if _alive(pid))
    assert "gunicorn" in commands and "celery -A core_memory worker" in commands and "celery -A core_memory beat" in commands
    assert _alive(postmaster)

    how(make)
    make.wait(timeout=90)

    output = log.read_text()
    assert [pid for pid in started if _alive(pid)] == []
    assert not _alive(postmaster)
    assert not (data_dir / "postgres" / "postmaster.pid").exists()
    database_stopped = output.index("==> Stopping the embedded database")
    for name in ("web", "worker", "beat"):
        assert output.index(f"{name} stopped (exit ") < database_stopped
    assert "Traceback" not in output
