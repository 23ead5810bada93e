"""One JSON request to a model served over HTTP, as every protocol Core speaks sends it: a pooled
client, a timeout per attempt, retries with backoff on what may pass (429, 5xx, timeouts, a
connection refused), an optional deadline that no retry may cross, and every failure a
`ProviderError` with a stable code whose message says what came back (an HTML error page from a
proxy, the server's own error type) without repeating the texts that were sent."""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

import httpx

from core_memory.base.telemetry.metrics import model_call_seconds, model_calls
from core_memory.base.telemetry.tracing import span
from core_memory.llm.protocol import ProviderError

logger = logging.getLogger(__name__)

RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
# The least time worth another attempt before a deadline.
LEAST_ATTEMPT_SECONDS = 0.05

_client_lock = threading.Lock()
_client: httpx.Client | None = None


def http_client() -> httpx.Client:
    """One pooled client for the process (httpx clients are thread-safe)."""
    global _client
    with _client_lock:
        if _client is None:
            _client = httpx.Client(limits=httpx.Limits(max_connections=50, max_keepalive_connections=10))
        return _client


@dataclass(frozen=True)
class Retries:
    attempts: int
    backoff_seconds: float
    most_backoff_seconds: float

    def delay(self, *, attempt: int, response: httpx.Response | None) -> float:
        delay = self.backoff_seconds * (2 ** (attempt - 1))
        if response is not None:
            try:
                delay = max(delay, float(response.headers.get("retry-after", "")))
            except ValueError:
                pass
        return min(delay, self.most_backoff_seconds)


def answer_is_html(response: httpx.Response) -> bool:
    return "html" in response.headers.get("content-type", "").lower() or response.content.lstrip()[:1] == b"<"


def _error_kind(response: httpx.Response) -> str:
    """The server's own name for its error, when it gives a short one (OpenAI's `error.type` or
    `error.code`, TEI's `error_type`): never its message, which may quote what was sent."""
    try:
        body = response.json()
    except (ValueError, RecursionError):
        return ""
    error = body.get("error") if isinstance(body, dict) else None
    candidates = [body.get("error_type")] if isinstance(body, dict) else []
    if isinstance(error, dict):
        candidates += [error.get("code"), error.get("type")]
    kind = next((value for value in candidates if isinstance(value, str) and value), "")
    return kind if len(kind) <= 60 and kind.replace("_", "").replace("-", "").isalnum() else ""


def _status_error(response: httpx.Response) -> ProviderError:
    status = response.status_code
    detail = " with an HTML page" if answer_is_html(response) else ""
    kind = _error_kind(response)
    detail += f" ({kind})" if kind else ""
    return ProviderError(
        "model_rate_limited" if status == 429 else "model_error", f"The model answered HTTP {status}{detail}.", status_code=status
    )


def _answer(response: httpx.Response) -> Any:
    if answer_is_html(response):
        raise ProviderError("invalid_model_response", f"The model answered an HTML page (HTTP {response.status_code}), not JSON.")
    try:
        return response.json()
    except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser follows
        raise ProviderError("invalid_model_response", "The model's answer is not JSON.") from None


def json_post(
    *, url: str, body: dict, api_key: str | None, timeout: float, retries: Retries, model_id: str, deadline: float | None = None
) -> Any:
    """POST `body` as JSON and answer the parsed JSON answer, retried as the module says; no
    attempt starts or lasts beyond `deadline` (a `time.monotonic()` value). Raises ProviderError.
    Counted and timed by model and outcome (the error's code), in a span of its own."""
    started = time.perf_counter()
    outcome = "ok"
    with span("model.call", **{"core.model": model_id}):
        try:
            return _json_post(url=url, body=body, api_key=api_key, timeout=timeout, retries=retries, model_id=model_id, deadline=deadline)
        except ProviderError as error:
            outcome = error.code
            raise
        finally:
            model_calls.labels(model=model_id, outcome=outcome).inc()
            model_call_seconds.labels(model=model_id, outcome=outcome).observe(time.perf_counter() - started)


def _json_post(
    *, url: str, body: dict, api_key: str | None, timeout: float, retries: Retries, model_id: str, deadline: float | None
) -> Any:
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    for attempt in range(1, retries.attempts + 1):
        response = None
        wait = timeout if deadline is None else min(timeout, deadline - time.monotonic())
        if wait < LEAST_ATTEMPT_SECONDS:
            raise ProviderError("model_timeout", "The model did not answer within the time the request may wait.")
        try:
            response = http_client().post(url, json=body, headers=headers, timeout=wait)
        except httpx.TimeoutException:
            error = ProviderError("model_timeout", f"The model did not answer within {wait:g} seconds.")
        except httpx.HTTPError as exc:
            error = ProviderError("model_unreachable", f"The model could not be reached ({type(exc).__name__}).")
        else:
            if response.status_code < 400:
                return _answer(response)
            error = _status_error(response)
            if response.status_code not in RETRYABLE_STATUS:
                raise error
        logger.warning("llm.call.retry", extra={"model": model_id, "attempt": attempt, "code": error.code, "status": error.status_code})
        pause = retries.delay(attempt=attempt, response=response)
        if attempt == retries.attempts or (deadline is not None and time.monotonic() + pause + LEAST_ATTEMPT_SECONDS > deadline):
            raise error
        time.sleep(pause)
    raise AssertionError("unreachable")
