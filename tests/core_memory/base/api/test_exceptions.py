"""One error body for every API error (core_memory.base.api.exceptions, R-2.3)."""
import pytest

pytestmark = pytest.mark.django_db


def assert_error_shape(response, *, status: int, error_type: str, message: str, param):
    assert response.status_code == status
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"type", "message", "param"}
    assert body["error"]["type"] == error_type
    assert body["error"]["message"] == message
    assert body["error"]["param"] == param


def test_every_error_has_the_same_body(tenant, other_tenant, anonymous):
    """R-2.3: `{"error": {"type", "message", "param"}}` for 400, 401, 403, 404 and 422."""
    keys = f"/v1/tenants/{tenant.organisation.id}/keys"
    no_management, _ = tenant.key_client(capabilities=("knowledge",))

    answers = [
        (tenant.client().post(keys, {"name": ""}, format="json"), 400, "invalid_request_error", "name: This field may not be blank.", "name"),
        (anonymous.get(keys), 401, "authentication_error", "Authentication credentials were not provided.", None),
        (no_management.get(keys), 403, "permission_error", "This key lacks the capability 'management'.", None),
        (tenant.client().get(f"/v1/tenants/{other_tenant.organisation.id}"), 404, "not_found_error", "No such organisation.", None),
        (
            tenant.client().post(keys, {"name": "x", "capabilities": ["memory"]}, format="json"),
            422,
            "invalid_request_error",
            "The capability 'memory' needs 'knowledge'.",
            "capabilities",
        ),
    ]

    for response, status, error_type, message, param in answers:
        assert_error_shape(response, status=status, error_type=error_type, message=message, param=param)


def test_malformed_json_is_a_400(tenant):
    """R-12.3: never a 500."""
    response = tenant.client().generic(
        "PATCH", f"/v1/tenants/{tenant.organisation.id}", "{not json", content_type="application/json"
    )

    assert_error_shape(
        response,
        status=400,
        error_type="invalid_request_error",
        message="JSON parse error - Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
        param=None,
    )


@pytest.mark.parametrize("path", ["/v1/nope", "/v1/indexes/", "/v1"])
def test_an_address_under_v1_without_a_route_is_a_json_404(tenant, path):
    """R-2.3: errors are JSON, also where no view answers."""
    assert_error_shape(
        tenant.client().get(path), status=404, error_type="not_found_error", message="No such route.", param=None
    )


def test_an_unexpected_error_on_the_api_is_a_json_500(tenant, monkeypatch):
    """R-2.3: a client parses every error the same way; the bug itself is logged."""
    from core_memory.api import stores as apis

    def broken(**kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(apis, "index_list_available", broken)
    client = tenant.client()
    client.raise_request_exception = False

    assert_error_shape(
        client.get("/v1/indexes"), status=500, error_type="api_error", message="Internal error.", param=None
    )


def test_the_console_keeps_its_own_not_found_page(admin_client):
    """R-10: only the API answers JSON."""
    response = admin_client.get("/console/nope/")

    assert response.status_code == 404
    assert response["Content-Type"] == "text/html; charset=utf-8"


def test_api_errors_are_english_even_when_the_browser_asks_for_dutch(tenant):
    """R-2.3: the error body is the API's contract; the console alone is Dutch by default (R-10.4)."""
    response = tenant.client().post(
        "/v1/indexes", {"name": "x", "embeddings": "misschien"}, format="json", HTTP_ACCEPT_LANGUAGE="nl"
    )

    assert response.status_code == 400
    assert response.json()["error"] == {
        "type": "invalid_request_error",
        "message": "Must be a valid boolean.",
        "param": "embeddings",
    }
