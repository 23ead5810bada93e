"""Tracing is configured only by the standard OTEL_* variables, and off costs nothing (issue 30)."""
from __future__ import annotations

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.sdk.trace.export import ConsoleSpanExporter

from core_memory.base.telemetry import tracing

OTEL_VARIABLES = (
    "OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
)


@pytest.fixture
def otel_environment(monkeypatch):
    for name in OTEL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_with_nothing_configured_nothing_is_installed_and_a_span_is_one_shared_empty_context(otel_environment):
    assert tracing.exporter_from_environment() is None
    assert tracing.tracing_configure() is False
    assert tracing.tracing_enabled() is False
    assert tracing.span("search", **{"core.index": "idx_1"}) is tracing.span("turn")


@pytest.mark.parametrize(
    ("variables", "exporter"),
    [
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, HttpExporter),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, HttpExporter),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, GrpcExporter),
        ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"}, GrpcExporter),
        ({"OTEL_TRACES_EXPORTER": "console"}, ConsoleSpanExporter),
    ],
)
def test_the_exporter_is_the_one_the_otel_variables_name(otel_environment, variables, exporter):
    for name, value in variables.items():
        otel_environment.setenv(name, value)

    assert isinstance(tracing.exporter_from_environment(), exporter)


@pytest.mark.parametrize(
    "variables",
    [
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_TRACES_EXPORTER": "none"},
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_SDK_DISABLED": "true"},
    ],
)
def test_an_exporter_turned_off_leaves_tracing_off(otel_environment, variables):
    for name, value in variables.items():
        otel_environment.setenv(name, value)

    assert tracing.exporter_from_environment() is None


def test_an_unknown_protocol_is_refused_by_name(otel_environment):
    otel_environment.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318")
    otel_environment.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")

    with pytest.raises(ValueError, match="OTEL_EXPORTER_OTLP_PROTOCOL"):
        tracing.exporter_from_environment()
