"""Where the embedded servers keep their data: ``var/`` under the project, or ``CORE_DATA_DIR``
(core_memory.embedded's PostgreSQL in ``postgres/``, core_memory.embedded_valkey's Valkey in
``valkey/``)."""
import os
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(os.environ.get("CORE_DATA_DIR", PROJECT_DIR / "var"))
