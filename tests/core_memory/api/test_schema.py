"""The run contract operators rely on (R-1.5): schema and docs under /v1/."""
import pytest

pytestmark = pytest.mark.django_db


def test_openapi_document_describes_the_api(anonymous):
    """R-1.5: the OpenAPI document is at /v1/schema and names the routes with their bodies."""
    response = anonymous.get("/v1/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json")

    assert response.status_code == 200
    document = response.json()
    assert "/v1/indexes" in document["paths"]
    assert "requestBody" in document["paths"]["/v1/indexes"]["post"]
    assert document["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"


def test_browsable_docs_are_served(anonymous):
    """R-1.5."""
    response = anonymous.get("/v1/docs")

    assert response.status_code == 200
    assert b"swagger" in response.content.lower()
