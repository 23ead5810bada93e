"""Request ids and JSON log lines an operator can search (issue 30, "Logs an operator can search")."""
from __future__ import annotations

import io
import json
import re

import pytest
from django.test import Client

from core_memory.base.telemetry.context import REQUEST_ID_MAX_LENGTH, organisation_id_var, request_id_var
from core_memory.base.telemetry.logs import logging_config
from core_memory.base.telemetry.tasks import task_context_begin, task_context_end, task_headers_add

pytestmark = pytest.mark.django_db


@pytest.fixture
def json_lines(json_log):
    """The lines written, parsed."""
    return lambda: [json.loads(line) for line in json_log.getvalue().splitlines()]


def test_the_load_balancers_request_id_is_kept_and_echoed(tenant):
    response = tenant.client().get("/v1/indexes", HTTP_X_REQUEST_ID="lb-4f2a:9")

    assert response.status_code == 200
    assert response["X-Request-Id"] == "lb-4f2a:9"


@pytest.mark.parametrize("sent", [None, "", "has space", "x" * (REQUEST_ID_MAX_LENGTH + 1), "ünïcode"])
def test_a_request_without_a_usable_id_gets_a_new_one(sent, tenant):
    headers = {} if sent is None else {"HTTP_X_REQUEST_ID": sent}

    response = tenant.client().get("/v1/indexes", **headers)

    assert re.fullmatch(r"[0-9a-f]{32}", response["X-Request-Id"])


def test_every_address_echoes_the_request_id_also_the_refusals(anonymous):
    for path in ("/healthz", "/v1/indexes", "/v1/nowhere", "/console/login/"):
        response = Client().get(path, HTTP_X_REQUEST_ID="probe-1")
        assert response["X-Request-Id"] == "probe-1", path


def test_a_json_line_carries_the_request_id_organisation_and_route_not_the_path(tenant, json_lines):
    """A refused request's line names the URL pattern, not the path: the path holds the person."""
    response = tenant.client().get("/v1/persons/jan-de-vries", HTTP_X_REQUEST_ID="req-77")

    assert response.status_code == 405
    refused = [line for line in json_lines() if line["logger"] == "django.request"]
    assert len(refused) == 1
    line = refused[0]
    assert (line["level"], line["request_id"], line["organisation"], line["route"]) == ("WARNING", "req-77", tenant.organisation.id, "/v1/persons/<subject:subject>")
    assert "jan-de-vries" not in json.dumps(json_lines())


def test_the_access_line_names_method_route_status_and_duration(tenant, json_lines):
    tenant.client().get("/v1/indexes", HTTP_X_REQUEST_ID="req-78")

    (line,) = [line for line in json_lines() if line["logger"] == "core_memory.access"]
    assert {name: line[name] for name in ("message", "request_id", "organisation", "route", "method", "status")} == {
        "message": "http.request GET /v1/indexes 200 " + f"{line['duration_ms']:.1f} ms", "request_id": "req-78", "organisation": tenant.organisation.id, "route": "/v1/indexes", "method": "GET", "status": 200,
    }
    assert line["duration_ms"] >= 0


def test_access_lines_are_off_unless_asked():
    """A process whose stderr nobody reads (a test's gunicorn, a pipe) is not filled a line per request."""
    assert logging_config(json_lines=True, level="INFO", access_lines=False)["loggers"]["core_memory.access"]["level"] == "WARNING"
    assert logging_config(json_lines=True, level="INFO", access_lines=True)["loggers"]["core_memory.access"]["level"] == "INFO"


class _Task:
    name = "memory.tasks.embed"

    def __init__(self, headers):
        self.request = type("Request", (), {"is_eager": False, **headers})()


def test_a_task_carries_the_request_that_queued_it():
    """The request id and organisation travel in the message's headers; the worker's lines carry them."""
    request_id_var.set("req-79")
    organisation_id_var.set("org_1")
    headers = {}
    task_headers_add(headers)
    request_id_var.set(None)
    organisation_id_var.set(None)

    task = _Task(headers)
    task_context_begin(task)
    try:
        assert (request_id_var.get(), organisation_id_var.get()) == ("req-79", "org_1")
        assert headers["core_queued_at"] > 0
    finally:
        task_context_end(task)
    assert request_id_var.get() is None


@pytest.mark.django_db(transaction=True)
def test_mcp_echoes_the_request_id_too():
    """`/mcp` is mounted beside Django: its answers carry the id as well, refusals included."""
    import sys

    from core_memory.wsgi import application

    environ = {
        "REQUEST_METHOD": "POST", "PATH_INFO": "/mcp", "SERVER_NAME": "localhost", "SERVER_PORT": "80", "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(b"{}"), "CONTENT_LENGTH": "2", "CONTENT_TYPE": "application/json", "wsgi.errors": sys.stderr,
        "HTTP_X_REQUEST_ID": "lb-mcp-1",
    }
    answer = {}

    def start_response(status, headers, exc_info=None):
        answer["status"], answer["headers"] = int(status.split()[0]), dict(headers)

    b"".join(application(environ, start_response))

    assert (answer["status"], answer["headers"]["X-Request-Id"]) == (401, "lb-mcp-1")
