"""Traces over OpenTelemetry, configured only by the standard `OTEL_*` variables.

Nothing is installed unless an exporter is named: `OTEL_TRACES_EXPORTER` (`otlp`, `console`),
or an OTLP endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) with
`OTEL_TRACES_EXPORTER` unset. Then `span()` is a shared empty context manager: the hot paths
pay one flag test. With an exporter, the OTLP protocol is `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`
or `OTEL_EXPORTER_OTLP_PROTOCOL` (`http/protobuf`, the default, or `grpc`); the SDK reads the
rest (endpoint, headers, `OTEL_SERVICE_NAME`, `OTEL_TRACES_SAMPLER`, batch sizes) itself.

Django's requests, Celery's tasks (a task is the child of the request that queued it: the
instrumentation carries the context in the message's headers), PostgreSQL statements (without
their parameters) and model calls over httpx are traced by the standard instrumentations; Core's
own spans name its stages. Their attributes are ids, counts and states: never a person's name,
a record's text or a query. A request's URL is recorded as its route (`/v1/persons/<subject:subject>`).
"""
from __future__ import annotations

import contextlib
import functools
import os

from opentelemetry import trace

INSTRUMENTATION_NAME = "core_geheugen"
_NO_SPAN = contextlib.nullcontext()
# Attributes of a server span that hold the path or the query as sent: written as the route.
_URL_ATTRIBUTES = ("http.target", "http.url", "url.full", "url.path", "url.query")


class _State:
    tracer: trace.Tracer | None = None
    instrumentors: list = []


def tracing_enabled() -> bool:
    return _State.tracer is not None


def span(name: str, **attributes):
    """A span around a stage of Core's work, child of the current one; attributes that are None
    are left out. When tracing is off, an empty context manager (nothing allocated)."""
    tracer = _State.tracer
    if tracer is None:
        return _NO_SPAN
    return tracer.start_as_current_span(name, attributes=_present(attributes))


def spanned(name: str):
    """A function run inside a span of `name` (when tracing)."""

    def decorate(function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            with span(name):
                return function(*args, **kwargs)

        return wrapper

    return decorate


def span_from(carrier: dict, name: str, *, server: bool = False, **attributes):
    """A span continuing the trace a carrier's W3C headers (`traceparent`) name: a request that
    came in, or the part of one another thread runs (`/mcp`'s server)."""
    tracer = _State.tracer
    if tracer is None:
        return _NO_SPAN
    from opentelemetry import propagate

    kind = trace.SpanKind.SERVER if server else trace.SpanKind.INTERNAL
    return tracer.start_as_current_span(name, context=propagate.extract(carrier), kind=kind, attributes=_present(attributes))


def current_carrier() -> dict[str, str]:
    """The current span's W3C headers, for another thread to continue it ({} when not tracing)."""
    if _State.tracer is None:
        return {}
    from opentelemetry import propagate

    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return carrier


class LastingSpan:
    """A span that lasts across a generator's yields (a turn streamed to its client), which a
    current span cannot: started without being made current (a child of what is current when
    it starts), its stages made its children explicitly, each current only while it runs."""

    def __init__(self, name: str, **attributes):
        tracer = _State.tracer
        self._span = None if tracer is None else tracer.start_span(name, attributes=_present(attributes))

    def stage(self, name: str, **attributes):
        if self._span is None:
            return _NO_SPAN
        return _State.tracer.start_as_current_span(name, context=trace.set_span_in_context(self._span), attributes=_present(attributes))

    def end(self, **attributes) -> None:
        if self._span is None:
            return
        self._span.set_attributes(_present(attributes))
        self._span.end()


def _present(attributes: dict) -> dict:
    return {name: value for name, value in attributes.items() if value is not None}


def span_set(**attributes) -> None:
    """Attributes known only during a stage (counts), on the current span, when tracing."""
    if _State.tracer is None:
        return
    current = trace.get_current_span()
    for name, value in attributes.items():
        if value is not None:
            current.set_attribute(name, value)


def exporter_from_environment():
    """The span exporter the `OTEL_*` variables name, or None (tracing off)."""
    if os.environ.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return None
    endpoint = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    exporter = os.environ.get("OTEL_TRACES_EXPORTER", "otlp" if endpoint else "none").strip().lower()
    if exporter in ("", "none"):
        return None
    if exporter == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter()
    if exporter != "otlp":
        raise ValueError(f"OTEL_TRACES_EXPORTER must be otlp, console or none, not {exporter!r}")
    protocol = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf"
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    elif protocol == "http/protobuf":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    else:
        raise ValueError(f"OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or grpc, not {protocol!r}")
    return OTLPSpanExporter()


def tracing_configure() -> bool:
    """In each process that serves or works (after a fork: the exporter's thread does not survive
    one): install tracing when the environment names an exporter. Whether it did."""
    if tracing_enabled():
        return True
    exporter = exporter_from_environment()
    if exporter is None:
        return False
    from opentelemetry.sdk.resources import OTELResourceDetector, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "core-geheugen")}).merge(OTELResourceDetector().detect())
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    tracing_install(provider)
    return True


def tracing_install(provider) -> None:
    """Core's spans and the instrumentations, on `provider` (tests give an in-memory one)."""
    from opentelemetry.instrumentation.celery import CeleryInstrumentor
    from opentelemetry.instrumentation.django import DjangoInstrumentor
    from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor

    DjangoInstrumentor().instrument(tracer_provider=provider, response_hook=_route_for_path, is_sql_commentor_enabled=False)
    CeleryInstrumentor().instrument(tracer_provider=provider)
    PsycopgInstrumentor().instrument(tracer_provider=provider, enable_commenter=False, skip_dep_check=True)
    HTTPXClientInstrumentor().instrument(tracer_provider=provider)
    _State.instrumentors = [DjangoInstrumentor(), CeleryInstrumentor(), PsycopgInstrumentor(), HTTPXClientInstrumentor()]
    _State.tracer = provider.get_tracer(INSTRUMENTATION_NAME)


def tracing_uninstall() -> None:
    for instrumentor in _State.instrumentors:
        instrumentor.uninstrument()
    _State.instrumentors = []
    _State.tracer = None


def _route_for_path(span, request, response) -> None:
    """The server span names the URL pattern, not the path or query (they may hold a person)."""
    if not span.is_recording():
        return
    from core_memory.base.telemetry.context import route_of

    route = route_of(request)
    recorded = getattr(span, "attributes", None) or {}
    for name in _URL_ATTRIBUTES:
        if name in recorded:
            span.set_attribute(name, route if name != "url.query" else "")
    span.set_attribute("http.route", route)
