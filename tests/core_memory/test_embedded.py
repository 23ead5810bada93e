"""`make run`/`make test` run their command under core_memory.embedded (R-1.1), which starts
the embedded PostgreSQL and Valkey when no server is configured and stops what it started."""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import redis

from core_memory import embedded

PROJECT = Path(__file__).resolve().parents[2]
CHILD = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, lambda *_: sys.exit(7))\n"
    "print('ready', flush=True)\n"
    "time.sleep(60)\n"
)


def test_a_sigterm_reaches_the_command_and_the_wrapper_answers_its_exit_code():
    """R-1.1: a supervisor's stop ends the service itself, not only the wrapper (which
    would leave it running, and the embedded database stopped under it)."""
    wrapper = subprocess.Popen(
        [sys.executable, "-m", "core_memory.embedded", "run", "--", sys.executable, "-c", CHILD],
        cwd=PROJECT,
        env={**os.environ, "DATABASE_URL": "postgres://unused/none"},
        stdout=subprocess.PIPE,
        text=True,
    )
    assert wrapper.stdout.readline().strip() == "ready"

    wrapper.send_signal(signal.SIGTERM)

    assert wrapper.wait(timeout=30) == 7


def test_the_embedded_page_cache_is_an_eighth_of_memory_between_128_mb_and_1_gb(monkeypatch):
    """Issue 12: a million-record store does not fit PostgreSQL's default 128 MB."""
    for memory, expected in ((512 * 2**20, "128MB"), (4 * 2**30, "512MB"), (64 * 2**30, "1024MB")):
        monkeypatch.setattr(embedded.os, "sysconf", lambda name, memory=memory: {"SC_PAGE_SIZE": 4096, "SC_PHYS_PAGES": memory // 4096}[name])
        assert embedded.shared_buffers() == expected


@pytest.fixture
def data_dir():
    """A data folder of the test's own, so `make test`'s servers under var/ are never the ones
    started or stopped here. World-readable: as root the embedded PostgreSQL runs as its own user."""
    folder = Path(tempfile.mkdtemp(prefix="core-embedded-"))
    folder.chmod(0o755)
    yield folder
    environment = {**os.environ, "CORE_DATA_DIR": str(folder)}
    subprocess.run([sys.executable, "-m", "core_memory.embedded", "stop"], cwd=PROJECT, env=environment, check=False)
    shutil.rmtree(folder, ignore_errors=True)


def _without_servers(data_dir: Path) -> dict[str, str]:
    unset = {"DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "CORE_RATE_LIMIT_URL"}
    return {name: value for name, value in os.environ.items() if name not in unset} | {"CORE_DATA_DIR": str(data_dir)}


def _valkey_pid(data_dir: Path) -> int:
    try:
        return int((data_dir / "valkey" / "valkey.pid").read_text())
    except OSError:
        return 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


ASK_VALKEY = "import os, redis; client = redis.Redis.from_url(os.environ['REDIS_URL']); print(client.ping(), client.dbsize(), client.connection_pool.connection_kwargs['db'])"


def test_without_redis_url_the_command_gets_an_embedded_valkey_that_is_stopped_after(data_dir):
    """Issue 20: with only Python, `make run` and `make test` have a real Redis-speaking broker."""
    environment = _without_servers(data_dir) | {"DATABASE_URL": "postgres://unused/none"}

    ran = subprocess.run([sys.executable, "-m", "core_memory.embedded", "run", "--", sys.executable, "-c", ASK_VALKEY], cwd=PROJECT, env=environment, capture_output=True, text=True, timeout=60)

    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split()[0] == "True"
    assert ran.stdout.split()[2] == "0"
    assert "Stopping the embedded Valkey" in ran.stderr
    assert not _valkey_pid(data_dir)
    assert not (data_dir / "valkey" / "url").exists()


def test_a_test_run_gets_valkeys_database_1_emptied_and_the_queue_of_database_0_is_kept(data_dir):
    """`make test` never sees what an earlier run left, and never touches `make run`'s queue,
    which survives a stop as the database's rows do."""
    environment = _without_servers(data_dir) | {"DATABASE_URL": "postgres://unused/none"}
    url = subprocess.run([sys.executable, "-m", "core_memory.embedded", "redis-url"], cwd=PROJECT, env=environment, capture_output=True, text=True, check=True).stdout.strip()
    with redis.Redis.from_url(url) as client:
        client.set("queued", "a task of make run")
    with redis.Redis.from_url(url[: url.rindex("/")] + "/1") as client:
        client.set("left", "by an earlier test run")

    ran = subprocess.run([sys.executable, "-m", "core_memory.embedded", "run", "--test", "--", sys.executable, "-c", ASK_VALKEY], cwd=PROJECT, env=environment, capture_output=True, text=True, timeout=60)

    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split() == ["True", "0", "1"]
    # Found running and used by nobody else: stopped, saving its queue.
    assert not _valkey_pid(data_dir)
    url = subprocess.run([sys.executable, "-m", "core_memory.embedded", "redis-url"], cwd=PROJECT, env=environment, capture_output=True, text=True, check=True).stdout.strip()
    assert redis.Redis.from_url(url).get("queued") == b"a task of make run"


def test_a_server_still_in_use_is_not_stopped_by_a_run_that_found_it(data_dir):
    """`make test` next to a running `make run` leaves `make run`'s servers alone."""
    environment = _without_servers(data_dir) | {"DATABASE_URL": "postgres://unused/none"}
    url = subprocess.run([sys.executable, "-m", "core_memory.embedded", "redis-url"], cwd=PROJECT, env=environment, capture_output=True, text=True, check=True).stdout.strip()
    worker = redis.Redis.from_url(url)
    worker.ping()  # a connection held open, as a worker's is

    ran = subprocess.run([sys.executable, "-m", "core_memory.embedded", "run", "--", sys.executable, "-c", "pass"], cwd=PROJECT, env=environment, capture_output=True, text=True, timeout=60)

    assert ran.returncode == 0, ran.stderr
    assert _alive(_valkey_pid(data_dir))
    assert worker.ping()


def test_a_manage_py_command_leaves_the_embedded_servers_as_it_found_them(data_dir):
    """Issue 20: a command run on its own while `make run` is stopped used to leave the
    database running, and the next `make run` then left it running after its stop."""
    environment = _without_servers(data_dir) | {"CORE_DEVELOPMENT": "true"}
    postmaster = data_dir / "postgres" / "postmaster.pid"

    first = subprocess.run([sys.executable, "manage.py", "check"], cwd=PROJECT, env=environment, capture_output=True, text=True, timeout=180)

    assert first.returncode == 0, first.stderr
    assert (data_dir / "postgres" / "PG_VERSION").exists()  # it did start (and create) one
    assert not postmaster.exists()
    assert not _valkey_pid(data_dir)

    for what in ("url", "redis-url"):
        subprocess.run([sys.executable, "-m", "core_memory.embedded", what], cwd=PROJECT, env=environment, capture_output=True, check=True)
    running = int(postmaster.read_text().split()[0]), _valkey_pid(data_dir)

    second = subprocess.run([sys.executable, "manage.py", "check"], cwd=PROJECT, env=environment, capture_output=True, text=True, timeout=180)

    assert second.returncode == 0, second.stderr
    assert all(_alive(pid) for pid in running)
