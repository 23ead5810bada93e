from django.db import models  # noqa: F401 — filled by the records and extraction issues
