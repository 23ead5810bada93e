"""The addresses the README gives lead somewhere (issue 20): `/` to the console, the console's
pages without their trailing slash to the page, `/healthz/` answered, the documents with a
slash redirected; the API's addresses are not guessed at (a POST must not lose its body)."""
import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "path, target",
    [
        ("/", "/console/"),
        ("/console", "/console/"),
        ("/v1/docs/", "/v1/docs"),
        ("/v1/redoc/", "/v1/redoc"),
        ("/v1/schema/", "/v1/schema"),
    ],
)
def test_an_address_without_or_with_a_stray_slash_redirects_to_its_page(path, target):
    response = Client().get(path)

    assert response.status_code in (301, 302)
    assert response["Location"] == target


@pytest.mark.parametrize("path", ["/v1/docs/", "/v1/redoc/", "/v1/schema/"])
def test_the_documents_with_a_slash_end_at_the_document(path):
    assert Client().get(path, follow=True).status_code == 200


def test_a_console_page_without_its_slash_redirects_to_the_page(console):
    response = console.get("/console/memory/memoryrecord?q=anna")

    assert response.status_code == 301
    assert response["Location"] == "/console/memory/memoryrecord/?q=anna"
    assert console.get(response["Location"]).status_code == 200


def test_the_redirected_console_asks_for_a_login():
    response = Client().get("/", follow=True)

    assert response.redirect_chain[-1][0].startswith("/console/login/")
    assert response.status_code == 200


@pytest.mark.parametrize("path", ["/healthz", "/healthz/"])
def test_health_answers_with_and_without_the_slash(path):
    response = Client().get(path)

    assert response.status_code == 200
    assert response.json()["status"] == "ok"


def test_an_api_address_with_a_slash_is_a_json_404_not_a_redirect(tenant):
    response = tenant.client().post("/v1/indexes/", {"name": "x"}, format="json")

    assert response.status_code == 404
    assert response.json()["error"]["type"] == "not_found_error"
