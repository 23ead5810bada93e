"""`make run`: migrate, collect static files, then run the Procfile's web, worker and beat.

Stopping is this script's job (tests/scripts/test_run.py signals `make` itself):
- make passes a SIGTERM on to `core_memory.embedded run`, which passes it to us; a
  terminal's Ctrl-C reaches us directly. Either way each Procfile process gets one
  SIGTERM — its main process only, so gunicorn and Celery shut down gracefully (a
  Celery worker finishes its running task; acks_late redelivers it if it cannot).
- We wait up to `GRACE_SECONDS` for them, then kill what is left, process group by
  process group (each process runs in its own, so its children — gunicorn's workers,
  Celery's pool — go too). No orphan survives us.
- Only after we return does `core_memory.embedded run` stop the embedded database.
A process that ends by itself stops the others too: a half-running service helps nobody.
A second signal while stopping kills at once.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

PROJECT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
BIN = Path(PYTHON).parent
GRACE_SECONDS = float(os.environ.get("CORE_STOP_GRACE_SECONDS", "20"))
APP_ROLE = "core_app"


def url_with_user(url: str, user: str) -> str:
    """`url` (postgres://user@host/db, no password: the embedded server trusts local sockets) as `user`."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{user}@{host}"))


def step(message: str) -> None:
    print(f"==> {message}", flush=True)


def procfile_entries(path: Path) -> list[tuple[str, str]]:
    entries = []
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, _, command = line.partition(":")
            entries.append((name.strip(), command.strip()))
    return entries


class Supervisor:
    def __init__(self, entries: list[tuple[str, str]], environment: dict[str, str]):
        self.entries = entries
        self.environment = environment
        self.processes: dict[str, subprocess.Popen] = {}
        self.stopping = threading.Event()
        self.killing = False
        self.width = max(len(name) for name, _ in entries)
        self.output_lock = threading.RLock()

    def say(self, name: str, line: str) -> None:
        with self.output_lock:
            sys.stdout.write(f"{time.strftime('%H:%M:%S')} {name.ljust(self.width)} | {line}\n")
            sys.stdout.flush()

    def start(self) -> None:
        for name, command in self.entries:
            process = subprocess.Popen(
                ["/bin/sh", "-c", f"exec {command}"],
                env=self.environment,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # its own process group: a Ctrl-C is ours to pass on
                text=True,
                errors="replace",
            )
            self.processes[name] = process
            self.say("system", f"{name} started (pid {process.pid})")
            threading.Thread(target=self._relay, args=(name, process), daemon=True).start()

    def _relay(self, name: str, process: subprocess.Popen) -> None:
        for line in process.stdout:
            self.say(name, line.rstrip("\n"))

    def on_signal(self, signum, frame) -> None:
        if self.stopping.is_set():
            self.say("system", f"{signal.Signals(signum).name} again: killing everything now")
            self.killing = True
        else:
            self.say("system", f"{signal.Signals(signum).name} received: stopping")
        self.stopping.set()

    def run(self) -> int:
        self.start()
        while not self.stopping.is_set():
            ended = [name for name, process in self.processes.items() if process.poll() is not None]
            if ended:
                self.say("system", f"{ended[0]} ended (exit {self.processes[ended[0]].returncode}): stopping the others")
                break
            self.stopping.wait(0.2)
        return self.stop()

    def stop(self) -> int:
        for name, process in self.processes.items():
            if process.poll() is None:
                self.say("system", f"sending SIGTERM to {name} (pid {process.pid})")
                self._signal_main(process, signal.SIGTERM)
        deadline = time.monotonic() + GRACE_SECONDS
        while time.monotonic() < deadline and not self.killing:
            if all(process.poll() is not None for process in self.processes.values()):
                break
            time.sleep(0.1)
        for name, process in self.processes.items():
            if process.poll() is None:
                self.say("system", f"{name} did not stop in {GRACE_SECONDS:g} s: SIGKILL")
            # The whole group, also when its main process is gone: no child outlives it.
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait()
            self.say("system", f"{name} stopped (exit {process.returncode})")
        return 0 if self.stopping.is_set() else 1

    @staticmethod
    def _signal_main(process: subprocess.Popen, signum: int) -> None:
        try:
            process.send_signal(signum)
        except ProcessLookupError:
            pass


def next_command(environment: dict[str, str]) -> str:
    """The banner's first command, as it runs when pasted into another terminal: from any
    folder, and in development mode when `make run` is (settings refuse to start without a
    SECRET_KEY otherwise). Other settings (DATABASE_URL, CORE_DATA_DIR) are the user's own."""
    development = "CORE_DEVELOPMENT=true " if environment.get("CORE_DEVELOPMENT", "").lower() in ("true", "1", "yes", "on") else ""
    return f'{development}{PYTHON} {PROJECT / "manage.py"} createorg "My organisation" --json'


def main() -> int:
    os.chdir(PROJECT)
    environment = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    supervisor = Supervisor(procfile_entries(PROJECT / "Procfile"), environment)
    # Until the processes run, a signal simply ends the preparation steps.
    step("Applying database migrations")
    subprocess.run([PYTHON, "manage.py", "migrate", "--noinput"], check=True, env=environment)
    if environment.get("CORE_EMBEDDED_DATABASE") == "true":
        # Migrated as the embedded server's superuser; the service runs as a role that may not
        # rewrite the audit log or its chain (docs/decisions.md "Audit").
        role = environment.get("CORE_DATABASE_APP_ROLE", APP_ROLE)
        step(f"Granting the service's database role {role} what it needs")
        subprocess.run([PYTHON, "manage.py", "database_roles", "--app-role", role], check=True, env=environment)
        environment["DATABASE_URL"] = url_with_user(environment["DATABASE_URL"], role)
    step("Collecting static files (console, Swagger UI, ReDoc)")
    subprocess.run([PYTHON, "manage.py", "collectstatic", "--noinput", "--verbosity", "1"], check=True, env=environment)
    if "PROMETHEUS_MULTIPROC_DIR" not in environment:
        # The web workers and the Celery processes count into one folder, emptied at each start,
        # so `/metrics` adds them all up (README "Operations").
        counts = Path(environment.get("CORE_DATA_DIR") or PROJECT / "var") / "prometheus"
        shutil.rmtree(counts, ignore_errors=True)
        counts.mkdir(parents=True)
        environment["PROMETHEUS_MULTIPROC_DIR"] = str(counts)
    host = environment.get("HOST", "127.0.0.1")
    port = environment.get("PORT", "8000")
    step("Starting web, worker and beat (Ctrl-C or SIGTERM stops them all, then the database)")
    print(
        f"\nCore Geheugen on http://{host}:{port}  (API /v1/, console /console/, docs /v1/docs and /v1/redoc, "
        f"MCP /mcp, health /healthz)\n"
        f"Next: {next_command(environment)}\n",
        flush=True,
    )
    signal.signal(signal.SIGTERM, supervisor.on_signal)
    signal.signal(signal.SIGINT, supervisor.on_signal)
    return supervisor.run()


if __name__ == "__main__":
    sys.exit(main())
