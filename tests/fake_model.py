"""A fake OpenAI-compatible chat model: a real HTTP server in a thread.

It speaks `POST /v1/chat/completions`, records every request (body and headers),
and answers from a script: queued answers are used in order; when the script is
empty it answers the `default` (a plain "ok"; a function of the request body makes
it). Use it from tests and the bench:

    with FakeChatModel() as model:
        model.reply("Hello")                                    # one answer
        model.reply(tool_calls=[("call_1", "memory__idx__search", {"query": "x"})])
        model.fail(429)                                         # one HTTP error, then the next answer
        model.fail(500, times=None)                             # this error for ever
        model.answer(completion("late"), delay=0.5)              # slower than the client's timeout
        model.answer(completion("{}"), format_name="core_extraction")  # only for that response_format
        model.respond(lambda body: completion(...), times=None)  # an answer made from the request
        held = model.hold(completion("{}"))                      # answers once held.set() is called
        settings.CORE_MODELS = [model.config("fake-chat")]

A scripted answer with `format_name` is given only to a request whose `response_format`
carries that json_schema name; the others pass it by, in order.

`ScriptedServer` is the scripted server itself; the fake embedding and rerank servers
(tests/fake_retrieval_models.py) are kinds of it, as the chat model is.
"""
from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class RecordedRequest:
    path: str
    headers: dict
    body: dict
    received_at: float = field(default_factory=time.monotonic)


def completion(content: str | None = None, *, tool_calls=None, finish_reason: str | None = None, usage: tuple[int, int] = (10, 5)) -> dict:
    """A Chat Completions answer; `tool_calls` as (id, name, arguments dict or JSON string)."""
    calls = [
        {
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments)},
        }
        for call_id, name, arguments in (tool_calls or [])
    ]
    message: dict = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    prompt_tokens, completion_tokens = usage
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "model": "fake",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason or ("tool_calls" if calls else "stop")}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": prompt_tokens + completion_tokens},
    }


class ScriptedServer:
    """A real HTTP server in a thread that records every request and answers from a script (the
    module's docstring); a kind of model server names its `paths` and its `default` answer."""

    paths: tuple[str, ...] = ()

    def __init__(self, *, default=None):
        self.requests: list[RecordedRequest] = []
        self.default = default
        # [status, body or responder, remaining times or None for ever, delay, format name, hold event]
        self._script: deque = deque()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def root_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def base_url(self) -> str:
        return self.root_url + "/v1"

    def answer(
        self,
        body: dict | bytes,
        *,
        status: int = 200,
        times: int | None = 1,
        delay: float = 0.0,
        format_name: str | None = None,
        hold: threading.Event | None = None,
        content_type: str = "application/json",
    ) -> None:
        """Queue an answer (bytes are sent as they are, as `content_type`); `delay` seconds before
        it is sent (to exceed a client's timeout); only for requests asking for `format_name`; not
        before `hold` is set."""
        with self._lock:
            self._script.append([status, body, times, delay, format_name, hold, content_type])

    def respond(self, responder, *, times: int | None = 1, format_name: str | None = None) -> None:
        """Queue an answer made by `responder(request body) -> dict` when the request comes."""
        self.answer(responder, times=times, format_name=format_name)

    def hold(self, body: dict, *, format_name: str | None = None) -> threading.Event:
        """Queue an answer that waits until the returned event is set (a call in flight)."""
        held = threading.Event()
        self.answer(body, format_name=format_name, hold=held)
        return held

    def fail(self, status: int, *, times: int | None = 1, body: dict | None = None) -> None:
        self.answer(body or {"error": {"message": f"scripted {status}"}}, status=status, times=times)

    def requests_settled(self, count: int, *, timeout: float = 2.0) -> list[RecordedRequest]:
        """The requests once `count` have arrived (or `timeout` passed): a client that gave up on
        a slow answer may return before this server's thread has even read its last request."""
        deadline = time.monotonic() + timeout
        while len(self.requests) < count and time.monotonic() < deadline:
            time.sleep(0.01)
        return list(self.requests)

    def html(self, status: int, *, times: int | None = 1) -> None:
        """An HTML error page, as a proxy in front of a model server sends one."""
        page = f"<html><head><title>{status}</title></head><body><h1>{status} Bad Gateway</h1><hr>nginx</body></html>"
        self.answer(page.encode(), status=status, times=times, content_type="text/html")

    def _next(self, request_body) -> tuple[int, dict | bytes, float, threading.Event | None, str]:
        requested = ((request_body or {}).get("response_format") or {}).get("json_schema", {}).get("name") if isinstance(request_body, dict) else None
        with self._lock:
            entry = next((each for each in self._script if each[4] is None or each[4] == requested), None)
            if entry is None:
                default = self.default(request_body) if callable(self.default) else self.default
                return 200, default, 0.0, None, "application/json"
            if entry[2] is not None:
                entry[2] -= 1
                if entry[2] <= 0:
                    self._script.remove(entry)
            status, body, _, delay, _, hold, content_type = entry
        if callable(body):
            body = body(request_body)
        return status, body, delay, hold, content_type

    def _handler_class(self):
        model = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 — the http.server protocol
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"null")
                except ValueError:
                    body = None
                with model._lock:
                    model.requests.append(RecordedRequest(path=self.path, headers=dict(self.headers), body=body))
                if self.path.rstrip("/") not in model.paths:
                    status, answer, delay, hold, content_type = 404, {"error": {"message": "not found"}}, 0.0, None, "application/json"
                else:
                    status, answer, delay, hold, content_type = model._next(body)
                if hold is not None:
                    hold.wait(timeout=60)
                if delay:
                    time.sleep(delay)
                payload = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting (a timeout under test)

            def log_message(self, format, *args):  # noqa: A002 — keep test output quiet
                pass

        return Handler

    def start(self):
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stops serving and frees the port (also for a model never started: an unreachable one)."""
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class FakeChatModel(ScriptedServer):
    """An OpenAI-compatible chat model: `POST /v1/chat/completions`."""

    paths = ("/v1/chat/completions",)

    def __init__(self, *, default: dict | None = None):
        super().__init__(default=default or completion("ok"))

    def config(self, model_id: str = "fake-chat", **fields) -> dict:
        return {"id": model_id, "provider": "openai", "base_url": self.base_url, "api_key_env": None, **fields}

    def reply(self, content: str | None = None, **fields) -> None:
        self.answer(completion(content, **fields))
