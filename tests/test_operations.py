"""What an operations team sees (issue 30): Prometheus metrics after real traffic, the dashboard's
metrics all there, a turn's span tree, and no person's text or name in any span or log line."""
from __future__ import annotations

import io
import json
import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.test import Client
from django.utils import timezone
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client.parser import text_string_to_metric_families

from core_memory.base.telemetry.tracing import tracing_install, tracing_uninstall
from tests.extraction.builders import add, extraction_answer, switch_put
from tests.factories import work_command_summary

pytestmark = pytest.mark.django_db

DASHBOARD = Path(__file__).resolve().parents[1] / "docs" / "grafana-dashboard.json"
TOKEN = "scraper-token-for-tests"
# What the person said and who she is: none of it may leave Core in a span or a log line.
PERSON = "annelies-de-boer"
SAID = "Stuur mijn facturen voortaan per e-mail."
REMEMBERED = "Wil facturen per e-mail."
QUERY = "hoe wil ze haar facturen"
PRIVATE_WORDS = (PERSON, "facturen", "e-mail", "Stuur", "hoe wil ze")


@pytest.fixture
def fake_model(fake_model):
    fake_model.default = extraction_answer()
    return fake_model


@pytest.fixture
def spans():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing_install(provider)
    try:
        yield exporter
    finally:
        tracing_uninstall()


def _traffic(tenant, fake_model, settings) -> dict:
    """A turn with memory, an extraction run, a search and a refused request, as in production."""
    client, _ = tenant.key_client(memory={"injection": {"enabled": True, "index_id": tenant.index.id}})
    switch_put(client, tenant.index.id)
    fake_model.reply("Fijn, dan stuur ik de facturen per e-mail.", usage=(20, 8))
    turn = client.post("/v1/responses", {"model": "fake-chat", "user": PERSON, "input": SAID}, format="json").json()
    assert turn["status"] == "completed"

    def extraction(request_body):
        user_item = json.loads(request_body["messages"][-1]["content"])["items"][0]
        return extraction_answer([add(REMEMBERED, type="preference", item_ids=[user_item["id"]])])

    fake_model.respond(extraction, format_name="core_extraction")
    summary = work_command_summary("run_extraction", now=timezone.now() + timedelta(minutes=31))
    assert summary["switches"][0]["written"] == 1
    found = client.post("/v1/memory/search", {"index_id": tenant.index.id, "query": QUERY}, format="json", HTTP_X_CORE_SUBJECT=PERSON)
    assert [hit["text"] for hit in found.json()["data"]] == [REMEMBERED]
    settings.CORE_RATE_LIMIT_ANONYMOUS_PER_MINUTE = 0
    assert Client().get("/v1/indexes").status_code == 429
    return turn


def _scrape(settings) -> dict[str, set[str]]:
    """Sample names (`core_model_calls_total`, `…_bucket`) to their label sets, parsed as Prometheus does."""
    settings.CORE_METRICS_TOKEN = TOKEN
    response = Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200
    samples: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples.setdefault(sample.name, set()).add(json.dumps(sample.labels, sort_keys=True))
    return samples


def test_metrics_are_not_served_without_the_operators_token(settings):
    """Without CORE_METRICS_TOKEN `/metrics` does not exist; with it, only its bearer is answered."""
    assert Client().get("/metrics").status_code == 404
    settings.CORE_METRICS_TOKEN = TOKEN
    assert Client().get("/metrics").status_code == 404
    assert Client().get("/metrics", HTTP_AUTHORIZATION="Bearer another-token").status_code == 404
    assert Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 200


def test_after_a_turn_a_search_and_an_extraction_run_every_metric_of_the_dashboard_is_there(tenant, fake_model, settings):
    _traffic(tenant, fake_model, settings)

    samples = _scrape(settings)

    named = {name for panel in json.loads(DASHBOARD.read_text())["panels"] for target in panel["targets"] for name in re.findall(r"\bcore_[a-z_]+", target["expr"])}
    assert len(named) >= 18
    assert sorted(named - set(samples)) == []


def test_metrics_after_real_traffic_name_routes_modes_models_and_causes_never_a_person(tenant, fake_model, settings):
    _traffic(tenant, fake_model, settings)

    samples = _scrape(settings)

    labels = lambda name: [json.loads(each) for each in samples.get(name, ())]  # noqa: E731
    assert {"route": "/v1/responses", "method": "POST", "status": "200", "le": "+Inf"} in labels("core_http_request_duration_seconds_bucket")
    assert {"route": "/v1/memory/search", "method": "POST", "status": "200"} in labels("core_http_request_duration_seconds_count")
    assert {"mode": "text"} in labels("core_search_duration_seconds_count")
    assert {"model": "fake-chat", "outcome": "ok"} in labels("core_model_calls_total")
    assert {"cause": "address"} in labels("core_rate_limit_refusals_total")
    assert {"kind": "window", "outcome": "succeeded"} in labels("core_work_units_run_total") or any(each["kind"] == "window" for each in labels("core_work_units_run_total"))
    assert {"state": "succeeded"} in labels("core_extraction_windows") or len(labels("core_extraction_windows")) >= 3
    everything = json.dumps(samples, default=sorted)
    for word in PRIVATE_WORDS:
        assert word not in everything


def test_a_turns_span_tree_names_its_stages_and_holds_no_persons_text_or_name(tenant, fake_model, settings, spans, json_log):
    turn = _traffic(tenant, fake_model, settings)

    finished = spans.get_finished_spans()
    by_id = {span.context.span_id: span for span in finished}
    (turn_span,) = [span for span in finished if span.name == "turn"]
    request_span = by_id[turn_span.parent.span_id]
    assert request_span.name == "POST v1/responses"
    stages = [span.name for span in finished if span.parent is not None and span.parent.span_id == turn_span.context.span_id]
    assert stages[0] == "turn.memory_block" and {"turn.model_call", "turn.store"} <= set(stages)
    (call,) = [span for span in finished if span.name == "model.call" and by_id.get(span.parent.span_id, turn_span).name == "turn.model_call"]
    assert by_id[call.parent.span_id].parent.span_id == turn_span.context.span_id
    assert turn_span.attributes["core.response"] == turn["id"]
    assert turn_span.attributes["core.organisation"] == tenant.organisation.id
    assert any(span.name == "turn.plan" and span.parent.span_id == request_span.context.span_id for span in finished)
    search_stages = {span.name for span in finished if span.name.startswith("search.")}
    # A person's full-text search reads its candidates in one statement (memory.search.pipeline).
    assert {"search.lexemes", "search.candidates_read", "search.fusion"} <= search_stages
    assert any(span.name == "extraction.window.run" for span in finished)

    exported = json.dumps([{"name": span.name, "attributes": dict(span.attributes or {}), "events": [dict(event.attributes or {}) for event in span.events]} for span in finished], default=str)
    lines = json_log.getvalue()
    assert lines, "no log line was written"
    for word in PRIVATE_WORDS:
        assert word not in exported, f"a span holds {word!r}"
        assert word not in lines, f"a log line holds {word!r}"


@pytest.mark.skipif(not __import__("os").environ.get("REDIS_URL"), reason="REDIS_URL is unset: no Redis broker to read the message from")
def test_a_queued_task_carries_the_requests_trace_and_id_in_its_headers(spans):
    """A task is the child of the request that queued it: the message holds the request's trace
    context (`traceparent`, which the worker's instrumentation continues) and its request id."""
    import uuid

    import redis
    from opentelemetry import trace

    from core_memory.base.telemetry.context import request_id_var
    from core_memory.base.telemetry.tracing import span
    from core_memory.celery import app

    queue = f"test-operations-{uuid.uuid4().hex}"
    request_id_var.set("req-task-1")
    try:
        with span("request"):
            trace_id = format(trace.get_current_span().get_span_context().trace_id, "032x")
            app.send_task("audit.tasks.audit_retention_purge_task", queue=queue)
    finally:
        request_id_var.set(None)
    client = redis.Redis.from_url(__import__("os").environ["REDIS_URL"])
    try:
        message = json.loads(client.lindex(queue, -1))
    finally:
        client.delete(queue)
        client.close()

    headers = message["headers"]
    assert headers["traceparent"].split("-")[1] == trace_id
    assert headers["core_request_id"] == "req-task-1"
    assert headers["core_queued_at"] > 0


@pytest.mark.django_db(transaction=True)
def test_an_mcp_tool_call_joins_the_requests_trace(tenant, spans):
    """`/mcp`'s server runs on its own thread: its tool call's span is still the child of the
    request's, in the trace the client sent (`traceparent`)."""
    import sys

    from core_memory.wsgi import application
    from tests.factories import make_key

    _, secret = make_key(tenant.organisation, capabilities=["knowledge", "memory"])
    body = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "memory_search", "arguments": {"query": QUERY}}}).encode()
    client_trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    environ = {
        "REQUEST_METHOD": "POST", "PATH_INFO": "/mcp", "SERVER_NAME": "localhost", "SERVER_PORT": "80", "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body), "CONTENT_LENGTH": str(len(body)), "CONTENT_TYPE": "application/json", "wsgi.errors": sys.stderr,
        "HTTP_ACCEPT": "application/json, text/event-stream", "HTTP_AUTHORIZATION": f"Bearer {secret}", "HTTP_X_CORE_SUBJECT": PERSON,
        "HTTP_HOST": "localhost", "HTTP_TRACEPARENT": f"00-{client_trace}-00f067aa0ba902b7-01",
    }
    answer = {}

    def start_response(status, headers, exc_info=None):
        answer["status"] = int(status.split()[0])

    b"".join(application(environ, start_response))

    assert answer["status"] == 200
    finished = spans.get_finished_spans()
    (server,) = [span for span in finished if span.name == "POST /mcp"]
    (tool,) = [span for span in finished if span.name == "mcp.tool"]
    assert format(server.context.trace_id, "032x") == client_trace
    assert (tool.context.trace_id, tool.parent.span_id) == (server.context.trace_id, server.context.span_id)
    assert tool.attributes["core.tool"] == "memory_search"
    exported = json.dumps([dict(span.attributes or {}) for span in finished], default=str)
    assert PERSON not in exported and "facturen" not in exported


@pytest.mark.django_db(transaction=True)
def test_with_a_shared_folder_every_gunicorn_worker_counts_into_one_scrape(tmp_path):
    """Two gunicorn workers answer in turn; with PROMETHEUS_MULTIPROC_DIR a scrape at either adds
    up both, so no request goes uncounted whichever worker Prometheus reaches."""
    import urllib.request

    from tests.processes import child_environment, gunicorn_start, stop, wait_until_answering

    environment = child_environment(PROMETHEUS_MULTIPROC_DIR=str(tmp_path), CORE_METRICS_TOKEN=TOKEN)
    process, base = gunicorn_start(environment=environment, workers=2)
    try:
        wait_until_answering(process, base)
        for _ in range(30):
            with urllib.request.urlopen(f"{base}/healthz", timeout=15) as answer:
                assert answer.status == 200
        counted = []
        for _ in range(4):
            scrape = urllib.request.Request(f"{base}/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
            with urllib.request.urlopen(scrape, timeout=30) as answer:
                families = {family.name: family for family in text_string_to_metric_families(answer.read().decode())}
            requests = families["core_http_request_duration_seconds"]
            counted.append(sum(s.value for s in requests.samples if s.name.endswith("_count") and s.labels["route"] == "/healthz"))
    finally:
        stop(process)

    assert counted == [30, 30, 30, 30]
