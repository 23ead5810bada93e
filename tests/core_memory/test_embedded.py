"""`make run`/`make test` run their command under core_memory.embedded (R-1.1)."""
import os
import signal
import subprocess
import sys
from pathlib import Path

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
