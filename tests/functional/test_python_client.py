"""The generated Python client (CONTRACT section 12): generated from the running configuration,
deterministic, ``mypy --strict`` clean with a script that uses every method, three deliberate
mistakes refused by the type checker, and the script run against the reference service (in
process, through httpx's WSGI transport)."""
from __future__ import annotations

import importlib
import pathlib
import subprocess
import sys

import httpx
import pytest

from jsonapi_pyramid import __version__
from jsonapi_pyramid.clientcli import main
from jsonapi_pyramid.clientschema import schema_of
from jsonapi_pyramid.pyclient import python_client, schema_digest
from tests.conftest import BACKENDS

ROOT = pathlib.Path(__file__).resolve().parents[2]
TOUR = ROOT / "docs" / "examples" / "python_client_tour.py"

MISTAKES = {
    "wrong_field": 'api.articles.list(fields={"articles": ["titel"]})\n',
    "wrong_include": 'api.articles.get("1", include=["comments.tags"])\n',
    "wrong_type": 'api.articles.update("1", attributes={"title": 7})\n',
}


def _write(folder: pathlib.Path, source: str) -> None:
    package = folder / "blogclient"
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text(source)
    (package / "py.typed").write_text("")


@pytest.fixture(scope="module")
def generated(wsgi_app, tmp_path_factory):
    folder = tmp_path_factory.mktemp("pyclient")
    source = python_client(schema_of(wsgi_app.registry), __version__)
    _write(folder, source)
    sys.path.insert(0, str(folder))
    sys.modules.pop("blogclient", None)
    yield folder, source
    sys.path.remove(str(folder))
    sys.modules.pop("blogclient", None)
    sys.modules.pop("python_client_tour", None)


def test_the_command_writes_the_package(tmp_path):
    assert main([str(ROOT / "development.ini"), "--lang", "python", "--out", str(tmp_path), "--name", "blogclient"]) == 0
    source = (tmp_path / "blogclient" / "__init__.py").read_text()
    assert "class ArticlesEndpoint(" in source and (tmp_path / "blogclient" / "py.typed").exists()
    with pytest.raises(SystemExit):
        main([str(ROOT / "development.ini"), "--lang", "python", "--out", str(tmp_path), "--name", "not-a-name"])


def test_the_client_is_deterministic_and_names_its_schema(wsgi_app, generated):
    _, source = generated
    schema = schema_of(wsgi_app.registry)
    assert python_client(schema, __version__) == source
    assert f"jsonapi-pyramid-client {__version__}" in source.splitlines()[0]
    assert schema_digest(schema) in source


def test_mypy_strict_passes_on_the_tour_and_refuses_each_mistake(generated, backend):
    if backend != BACKENDS[-1]:  # the same client on every backend: type-checked once
        pytest.skip(f"type-checked once, on the {BACKENDS[-1]} run")
    folder, _ = generated
    (folder / "tour.py").write_text(TOUR.read_text())
    for name, line in MISTAKES.items():
        (folder / f"{name}.py").write_text(f"from blogclient import Client\n\napi = Client('http://x')\n{line}")
    result = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", str(folder / ".mypy"),
                             "--config-file", "", "blogclient", "tour.py", *(f"{name}.py" for name in MISTAKES)],
                            cwd=folder, capture_output=True, text=True, timeout=300)
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    assert not [line for line in errors if line.startswith(("blogclient", "tour.py"))], result.stdout
    for name in MISTAKES:
        assert any(line.startswith(f"{name}.py:") for line in errors), (name, result.stdout)


def test_the_tour_runs_against_the_service(generated, wsgi_app, blog, auth_headers):
    blogclient = importlib.import_module("blogclient")
    spec = importlib.util.spec_from_file_location("python_client_tour", TOUR)
    tour = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tour)
    token = auth_headers(blog["admin"])["Authorization"].removeprefix("Bearer ")
    with blogclient.Client("http://blog.test", token, transport=httpx.WSGITransport(app=wsgi_app)) as api:
        seen = tour.tour(api)
    assert seen[0] == f"list: Hello, JSON:API by Identifier(type='users', id='{blog['hello'].user_id}')"
    assert seen[1].startswith("included: ['tags', 'users'], author ")
    assert seen[2].startswith("get: Hello, JSON:API, ") and seen[2].endswith("etag True")
    assert seen[3:5] == ["unchanged: True", "created: tags from-python"]
    assert seen[5].startswith("updated: Retitled, tags [Identifier(type='tags', id=")
    assert seen[6:9] == ["stale tag: 412 Precondition Failed", "deleted: 404", "iterated: 3 articles, one page each"]
    assert seen[9].startswith("sideposted: Sideposted with the tag sideposted (")  # its new id
