"""Prometheus metrics counted where things happen (the gauges read at scrape time live with
the `/metrics` view). Labels are bounded: a URL pattern, a mode, a model id the operator
configured, an outcome, a cause — never a person, a key or free text.

With `PROMETHEUS_MULTIPROC_DIR` set (several gunicorn workers, Celery's pool), prometheus-client
keeps each process's counts in files there and the view adds them up."""
from __future__ import annotations

from prometheus_client import Counter, Histogram

# Seconds: from a cached search's milliseconds to a slow model's minute.
_SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)

http_request_seconds = Histogram(
    "core_http_request_duration_seconds", "Time to answer a request, by URL pattern, method and status.", ["route", "method", "status"], buckets=_SECONDS
)
search_seconds = Histogram("core_search_duration_seconds", "Time of one search, by mode (text or hybrid).", ["mode"], buckets=_SECONDS)
turn_injected_records = Histogram(
    "core_turn_injected_records", "Records put in a turn's memory block.", buckets=(0, 1, 2, 5, 10, 20, 50, 100)
)
turn_injected_tokens = Histogram(
    "core_turn_injected_tokens", "Tokens of a turn's memory block.", buckets=(0, 50, 100, 250, 500, 1000, 1500, 2500, 5000, 10000)
)
model_calls = Counter("core_model_calls", "Calls to a model served over HTTP, by model id and outcome (ok or the error's code).", ["model", "outcome"])
model_call_seconds = Histogram(
    "core_model_call_duration_seconds", "Time of one model call, retries included, by model id and outcome.", ["model", "outcome"], buckets=_SECONDS
)
rate_limit_refusals = Counter("core_rate_limit_refusals", "Requests refused with 429, by cause.", ["cause"])
work_units_run = Counter("core_work_units_run", "Units of durable work a worker ran (extraction windows, maintenance jobs), by kind and outcome.", ["kind", "outcome"])
records_embedded = Counter("core_records_embedded", "Records given their vector by the embedding task.")
