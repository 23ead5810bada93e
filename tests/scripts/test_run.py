"""`make run` starts and stops as a process manager expects (R-1.1, issue 14): a signal to
`make` itself stops every process it started, the embedded database and Valkey last, and no
orphan survives. Real processes: make, the embedded PostgreSQL and Valkey, gunicorn, a Celery
worker and beat."""
from __future__ import annotations

import json
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
    # Whatever a failed test left running goes before its folder does.
    environment = {name: value for name, value in os.environ.items() if name not in {"DATABASE_URL", "REDIS_URL"}}
    subprocess.run([str(PROJECT / ".venv/bin/python"), "-m", "core_memory.embedded", "stop"], cwd=PROJECT, env=environment | {"CORE_DATA_DIR": str(folder)}, check=False)
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
    # Generous: a machine busy with other work (CI, colleagues' tests) migrates slowly.
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as answer:
                if answer.status == 200 and "worker ready" in _worker_ready(log):
                    return make, port, log
        except OSError:
            pass
        assert make.poll() is None, log.read_text()
        time.sleep(0.5)
    os.killpg(make.pid, signal.SIGTERM)  # the whole group: no orphan of a failed start
    make.wait(timeout=90)
    pytest.fail(f"make run did not become healthy:\n{log.read_text()}")


def _worker_ready(log: Path) -> str:
    return "worker ready" if "celery@" in log.read_text() and " ready." in log.read_text() else ""


def _postmaster_pid(data_dir: Path) -> int:
    return int((data_dir / "postgres" / "postmaster.pid").read_text().split()[0])


def _valkey_pid(data_dir: Path) -> int:
    return int((data_dir / "valkey" / "valkey.pid").read_text())


def _leave_the_servers_running(data_dir: Path) -> None:
    """What a command killed before it could stop them leaves behind."""
    environment = {name: value for name, value in os.environ.items() if name not in {"DATABASE_URL", "REDIS_URL"}}
    for what in ("url", "redis-url"):
        subprocess.run([str(PROJECT / ".venv/bin/python"), "-m", "core_memory.embedded", what], cwd=PROJECT, env=environment | {"CORE_DATA_DIR": str(data_dir)}, check=True, capture_output=True)


def _the_banners_command_runs_as_printed(data_dir: Path, log: Path) -> None:
    """Issue 20: pasted into another terminal (no CORE_DEVELOPMENT there), from another folder,
    the banner's command creates the organisation, on `make run`'s own database."""
    (printed,) = [line.removeprefix("Next: ") for line in log.read_text().splitlines() if line.startswith("Next: ")]
    terminal = {name: value for name, value in os.environ.items() if name not in {"DATABASE_URL", "REDIS_URL", "CORE_DEVELOPMENT", "MAKEFLAGS", "MAKELEVEL"}}
    ran = subprocess.run(["bash", "-c", printed], cwd="/", env=terminal | {"CORE_DATA_DIR": str(data_dir)}, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["key"].startswith("core_sk_")


@pytest.mark.timeout(480)
@pytest.mark.parametrize(
    "how, found_running",
    [
        # What a process manager does: SIGTERM to the main process only.
        pytest.param(lambda make: os.kill(make.pid, signal.SIGTERM), False, id="sigterm-to-make"),
        # What Ctrl-C in a terminal does: SIGINT to the foreground process group; this time the
        # servers were left running by a command before, and `make run` stops them all the same.
        pytest.param(lambda make: os.killpg(make.pid, signal.SIGINT), True, id="ctrl-c-with-servers-left-running"),
    ],
)
def test_a_signal_to_make_stops_every_process_and_the_database_and_valkey_last(data_dir, how, found_running):
    """R-1.1: nothing `make run` started outlives it, and the database and Valkey (the broker)
    outlive the rest; servers it found running with nobody using them are stopped too."""
    if found_running:
        _leave_the_servers_running(data_dir)
    make, port, log = _start(data_dir)
    started = _descendants(make.pid)
    postmaster, valkey = _postmaster_pid(data_dir), _valkey_pid(data_dir)
    commands = " ".join(Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ") for pid in started if _alive(pid))
    assert "gunicorn" in commands and "celery -A core_memory worker" in commands and "celery -A core_memory beat" in commands
    assert _alive(postmaster) and _alive(valkey)
    assert "redis" in json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5).read())["broker"]
    if not found_running:
        _the_banners_command_runs_as_printed(data_dir, log)

    how(make)
    make.wait(timeout=90)

    output = log.read_text()
    assert [pid for pid in started if _alive(pid)] == []
    assert not _alive(postmaster) and not _alive(valkey)
    assert not (data_dir / "postgres" / "postmaster.pid").exists()
    assert not (data_dir / "valkey" / "valkey.pid").exists()
    stopping = "==> Stopped the embedded {}, found running" if found_running else "==> Stopping the embedded {}"
    database_stopped, valkey_stopped = output.index(stopping.format("database")), output.index(stopping.format("Valkey"))
    for name in ("web", "worker", "beat"):
        assert output.index(f"{name} stopped (exit ") < min(database_stopped, valkey_stopped)
    assert "Traceback" not in output
