"""`make run`: migrate, collect static files, then web + worker + beat under honcho."""
import os
import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
BIN = Path(PYTHON).parent


def main() -> int:
    os.chdir(PROJECT)
    environment = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    for command in (["migrate", "--noinput"], ["collectstatic", "--noinput", "--verbosity", "0"]):
        subprocess.run([PYTHON, "manage.py", *command], check=True, env=environment)
    host = environment.get("HOST", "127.0.0.1")
    port = environment.get("PORT", "8000")
    print(
        f"\nCore Geheugen on http://{host}:{port}  (API /v1/, console /console/, docs /v1/docs, health /healthz)\n"
        f"Next: {PYTHON} manage.py createorg \"My organisation\" --json\n",
        flush=True,
    )
    return subprocess.call([str(BIN / "honcho"), "start", "-f", "Procfile"], env=environment)


if __name__ == "__main__":
    sys.exit(main())
