"""The console pages that span apps, registered on the console's site like every app's own
(`admin.py`): each reads from apps that stand above the model it shows, so it stands on the top
floor."""
from core_memory.console import audit, persons, stores, threads  # noqa: F401 — each registers its pages
