"""The server's /docs page: the OpenAPI schema as plain HTML, nothing loaded from another host."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from g2gt.serve.adapter import LoadedModel  # noqa: E402
from g2gt.serve.app import create_app  # noqa: E402
from g2gt.serve.openapi_page import openapi_html  # noqa: E402


@pytest.fixture(scope="module")
def client():
    # a model object that is never called: /docs and /openapi.json do not parse anything
    with TestClient(create_app({"m": LoadedModel("m", nlp=object())})) as c:
        yield c


def test_docs_page_lists_every_route_of_the_schema(client):
    page = client.get("/docs")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    spec = client.get("/openapi.json").json()
    for path in spec["paths"]:
        assert f"<code>{path}</code>" in page.text, path
    assert "ParseRequest" in page.text  # the JSON API's body schema is shown


def test_docs_page_loads_nothing_from_another_host(client):
    text = client.get("/docs").text
    links = re.findall(r"""(?:src|href)\s*=\s*["']?([^"' >]+)""", text)
    assert links and all(link.startswith("/") for link in links), links
    assert "<script" not in text.lower()


def test_openapi_html_escapes_what_the_schema_says():
    spec = {"info": {"title": "t<i>", "version": "1"},
            "paths": {"/x": {"get": {"summary": "<script>alert(1)</script>", "responses": {}}}}}
    text = openapi_html(spec)
    assert "<script>" not in text and "&lt;script&gt;" in text
