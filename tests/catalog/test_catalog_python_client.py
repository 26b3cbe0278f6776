"""The catalogue's generated Python client (nothing tuned to the blog): UUID and text keys,
inheritance, a self-referential tree; ``mypy --strict`` clean, and it reads and writes the
catalogue in process."""
from __future__ import annotations

import importlib
import subprocess
import sys

import httpx

from jsonapi_pyramid.clientcli import write_python_client
from jsonapi_pyramid.clientschema import schema_of
from tests.conftest import BACKENDS


def test_the_catalogue_s_client_type_checks_and_works(wsgi_app, backend, tmp_path):
    write_python_client(schema_of(wsgi_app.registry), tmp_path, "catalogclient")
    if backend == BACKENDS[-1]:  # the same client on every backend: type-checked once
        (tmp_path / "use.py").write_text(
            "from catalogclient import Client\n\n"
            "def titles(api: Client) -> list[str]:\n"
            "    page = api.books.list(sort=['-title'], filter={'pages': {'gte': 10}}, include=['author', 'genres.parent'])\n"
            "    return [book.attributes.title for book in page.data]\n")
        result = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--config-file", "",
                                 "--cache-dir", str(tmp_path / ".mypy"), "catalogclient", "use.py"],
                                cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stdout
    sys.path.insert(0, str(tmp_path))
    try:
        catalogclient = importlib.import_module("catalogclient")
        with catalogclient.Client("http://catalog.test", transport=httpx.WSGITransport(app=wsgi_app)) as api:
            person = api.people.create(attributes={"name": "Ursula"})
            book = api.books.create(attributes={"title": "The Word for World Is Forest", "pages": 189},
                                    relationships={"author": {"type": "people", "id": person.data.id}})
            assert len(book.data.id) == 36  # a UUID key
            found = api.books.list(filter={"pages": {"gte": 100}}, include=["author"])
            assert [b.attributes.title for b in found.data] == ["The Word for World Is Forest"]
            assert found.included[0].attributes.name == "Ursula"
            assert api.books.relationships.author.get(book.data.id) == catalogclient.Identifier("people", person.data.id)
            api.books.delete(book.data.id)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("catalogclient", None)
