"""The library's distribution, as a user gets it: ``pip install jsonapi_pyramid``.

Builds the sdist and the wheel the way a release would (``python -m build``: the wheel is built
from the unpacked sdist, so a file missing from the sdist fails here), checks both with
``twine check``, installs the wheel into a new virtual environment that cannot see this
repository, and runs the documentation's quick start (``docs/examples/quickstart.py``) from it,
as the quick start tells a user to: one read with an include, one create, the docs page.

One build and one environment for the whole module (about half a minute, most of it pip); the
``packaging`` marker selects or skips it (``-m "not packaging"``). Dependencies come from pip's
configured indexes through its cache.
"""
from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tarfile
import urllib.error
import urllib.request
import zipfile
from email.parser import Parser

import pytest

import jsonapi_pyramid

pytestmark = pytest.mark.packaging

ROOT = pathlib.Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "docs" / "examples" / "quickstart.py"
#: What the reference service needs and the library does not.
NOT_FOR_USERS = ("jsonapi_blog", "argon2", "alembic", "waitress", "psycopg", "swagger_ui")


def _run(args, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run([str(a) for a in args], capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, f"{args}\n{result.stdout}\n{result.stderr}"
    return result


def _user_environ() -> dict:
    """The environment of a user's shell: nothing pointing into this repository or its venv."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "PYTEST"))}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(str(ROOT)))
    return env


#: The inputs of the library's build, copied to a clean folder first: setuptools adds the files
#: listed in an existing ``*.egg-info/SOURCES.txt`` to an sdist, and a working tree's may be stale.
SOURCES = ("setup.py", "pyproject.toml", "MANIFEST.in", "README.md", "DESCRIPTION.md", "CHANGES.rst", "LICENSE",
           "development.ini", "production.ini", "jsonapi_pyramid", "docs", "tests", "jsonapi_blog", "examples")


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> dict[str, pathlib.Path]:
    source, out = tmp_path_factory.mktemp("source"), tmp_path_factory.mktemp("dist")
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "_build", "*.egg-info"))
        else:
            shutil.copy2(ROOT / name, source / name)
    # --no-isolation: the build backend (setuptools, wheel) of the development venv, no download.
    _run([sys.executable, "-m", "build", "--no-isolation", "--outdir", out, source], cwd=out)
    (sdist,) = out.glob("*.tar.gz")
    (wheel,) = out.glob("*.whl")
    return {"sdist": sdist, "wheel": wheel}


@pytest.fixture(scope="module")
def user_venv(tmp_path_factory, dist) -> pathlib.Path:
    """A new virtual environment with the wheel installed, as ``pip install jsonapi_pyramid`` does."""
    venv = tmp_path_factory.mktemp("user") / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv], env=_user_environ())
    python = venv / "bin" / "python"
    # This venv's pip installs into the new one (--python): no pip bootstrap in the new venv.
    _run([sys.executable, "-m", "pip", "--python", python, "install", "--quiet", dist["wheel"]],
         env=_user_environ(), cwd=venv.parent)
    return venv


def test_the_wheel_holds_the_library_alone(dist):
    with zipfile.ZipFile(dist["wheel"]) as wheel:
        names = wheel.namelist()
        info = f"jsonapi_pyramid-{jsonapi_pyramid.__version__}.dist-info"
        metadata = Parser().parsestr(wheel.read(f"{info}/METADATA").decode())
        entry_points = wheel.read(f"{info}/entry_points.txt").decode()
    assert {name.split("/")[0] for name in names} == {"jsonapi_pyramid", info}
    assert "jsonapi_pyramid/py.typed" in names
    assert "jsonapi_pyramid/scaffold/project/+package+/models.py_tmpl" in names
    assert "jsonapi_pyramid/testing/jsonapi-1.1.schema.json" in names  # the conformance kit's schema
    assert "jsonapi_pyramid/views/read.py" in names  # subpackages too
    assert "jsonapi_pyramid/testing/jsonapi-1.1.schema.json" in names  # the conformance kit's schema
    assert metadata["Version"] == jsonapi_pyramid.__version__
    unconditional = [r for r in metadata.get_all("Requires-Dist") if "extra ==" not in r]
    for name in ("argon2", "alembic", "waitress", "psycopg", "swagger"):
        assert not any(name in requirement.lower() for requirement in unconditional), unconditional
    extras = metadata.get_all("Provides-Extra")
    assert {"postgresql", "docs-ui", "testing", "observability"} <= set(extras)
    assert "jsonapi_blog" not in entry_points
    assert "jsonapi-pyramid-openapi" in entry_points and "jsonapi-pyramid-new" in entry_points
    assert "jsonapi-pyramid-schema = jsonapi_pyramid.schemacli:main" in entry_points
    assert "jsonapi-pyramid-resources = jsonapi_pyramid.resources_command:main" in entry_points
    assert "jsonapi-pyramid-client = jsonapi_pyramid.clientcli:main" in entry_points
    assert "jsonapi_pyramid/tsclient/runtime.ts" in names, names


def test_the_sdist_holds_the_library_its_licence_docs_and_tests(dist):
    """The source distribution is the library's source: the manual's sources and the test suite
    (with the reference service and example application it runs against) come with it; the
    repository's benchmarks, cluster and client tools do not."""
    with tarfile.open(dist["sdist"]) as sdist:
        names = [name.split("/", 1)[1] for name in sdist.getnames() if "/" in name]
    assert not [name for name in names if name.startswith(("bench/", "cluster/", "clients/", "docs/_build"))]
    assert not [name for name in names if "__pycache__" in name]
    assert {"setup.py", "pyproject.toml", "README.md", "DESCRIPTION.md", "CHANGES.rst", "LICENSE",
            "jsonapi_pyramid/py.typed", "docs/index.rst", "docs/conf.py", "docs/examples/quickstart.py",
            "tests/conftest.py", "tests/unit/test_layers.py", "jsonapi_blog/models.py",
            "examples/catalog/models.py"} <= set(names)


def test_the_metadata_names_its_licence_authors_and_homes(dist):
    """What a package index shows: the licence (MIT, its text in the wheel), authors, the project's
    URLs, keywords, the Python versions, and a description written for a package page: no
    relative links and no ``make`` commands of this repository."""
    with zipfile.ZipFile(dist["wheel"]) as wheel:
        info = f"jsonapi_pyramid-{jsonapi_pyramid.__version__}.dist-info"
        metadata = Parser().parsestr(wheel.read(f"{info}/METADATA").decode())
        names = wheel.namelist()
    assert "MIT" in (metadata.get("License-Expression") or metadata.get("License") or "")
    assert [n for n in names if n.startswith(info) and n.rsplit("/", 1)[-1] == "LICENSE"], names
    assert metadata["Author"]
    urls = dict(entry.split(", ", 1) for entry in metadata.get_all("Project-URL"))
    assert {"Documentation", "Changelog", "Source", "Issues"} <= set(urls)
    assert all(url.startswith("https://") for url in urls.values())
    assert "pyramid" in metadata["Keywords"] and "jsonapi" in metadata["Keywords"]
    classifiers = metadata.get_all("Classifier")
    assert {"Programming Language :: Python :: 3.11", "Programming Language :: Python :: 3.12", "Framework :: Pyramid"} <= set(classifiers)
    description = metadata.get_payload()
    assert "make " not in description and "DEVELOPMENT.md" not in description
    links = re.findall(r"\]\(([^)]+)\)", description)
    assert links and all(link.startswith("https://") for link in links), links
    unconditional = [r for r in metadata.get_all("Requires-Dist") if "extra ==" not in r]
    assert not [r for r in unconditional if r.lower().startswith("setuptools")], unconditional


def test_twine_check_passes(dist):
    result = _run([sys.executable, "-m", "twine", "check", "--strict", dist["sdist"], dist["wheel"]])
    assert result.stdout.count("PASSED") == 2


def test_the_installed_library_brings_no_reference_service(user_venv, tmp_path):
    probe = ("import importlib.metadata, importlib.util, json, sys; print(json.dumps({"
             "'absent': [n for n in sys.argv[1:] if importlib.util.find_spec(n) is None],"
             "'version': importlib.metadata.version('jsonapi_pyramid'),"
             "'file': __import__('jsonapi_pyramid').__file__, 'attr': __import__('jsonapi_pyramid').__version__}))")
    result = _run([user_venv / "bin" / "python", "-c", probe, *NOT_FOR_USERS], cwd=tmp_path, env=_user_environ())
    found = json.loads(result.stdout)
    assert found["absent"] == list(NOT_FOR_USERS)
    assert found["version"] == found["attr"] == jsonapi_pyramid.__version__
    assert pathlib.Path(found["file"]).is_relative_to(user_venv)
    assert not (user_venv / "bin" / "jsonapi-pyramid-initdb").exists()
    assert (user_venv / "bin" / "jsonapi-pyramid-openapi").exists()


def test_the_installed_generator_has_its_template(user_venv, tmp_path):
    """The template is package data: a wheel without it would write an empty project."""
    _run([user_venv / "bin" / "jsonapi-pyramid-new", "shelf"], cwd=tmp_path, env=_user_environ())
    written = {str(path.relative_to(tmp_path / "shelf")) for path in (tmp_path / "shelf").rglob("*.*")}
    assert {"setup.py", "development.ini", "shelf/models.py", "shelf/migrations/versions/0001_notes.py",
            "tests/test_notes.py"} <= written


def _request(url: str, data: dict | None = None) -> tuple[int, dict[str, str], str]:
    headers = {"Content-Type": "application/vnd.api+json"} if data is not None else {}
    request = urllib.request.Request(url, data=json.dumps(data).encode() if data is not None else None,
                                     headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read().decode()


def test_the_quick_start_serves_from_the_installed_wheel(user_venv, tmp_path):
    """The quick start, copied as a user would save it and run with the wheel's environment."""
    app = tmp_path / "app.py"
    app.write_text(QUICKSTART.read_text())
    env = _user_environ() | {"PORT": "0"}  # the quick start's port, 0: any free one (printed)
    server = subprocess.Popen([user_venv / "bin" / "python", app], cwd=tmp_path, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        line = server.stdout.readline()  # "Serving http://localhost:<port>/api/books", or EOF on a crash
        match = re.search(r"http://localhost:(\d+)/api/books", line)
        assert match, line + server.stderr.read()
        base = f"http://127.0.0.1:{match[1]}/api"

        status, headers, body = _request(f"{base}/books?include=author")
        assert status == 200 and headers["Content-Type"].startswith("application/vnd.api+json")
        document = json.loads(body)
        assert [(r["type"], r["attributes"]) for r in document["data"]] == [("books", {"title": "The Dispossessed"})]
        assert document["data"][0]["relationships"]["author"]["data"] == {"type": "authors", "id": "1"}
        assert [r["attributes"]["name"] for r in document["included"]] == ["Ursula K. Le Guin"]

        created = {"data": {"type": "books", "attributes": {"title": "The Lathe of Heaven"},
                            "relationships": {"author": {"data": {"type": "authors", "id": "1"}}}}}
        status, headers, body = _request(f"{base}/books", created)
        assert status == 201 and headers["Location"].endswith("/api/books/2"), body
        status, _, body = _request(f"{base}/books", {"data": {"type": "books", "attributes": {"title": ""}}})
        assert status == 422 and json.loads(body)["errors"][0]["source"]["pointer"] == "/data/attributes/title"

        # Without the docs-ui extra the docs page says what is missing instead of failing.
        status, _, body = _request(f"{base}/docs")
        assert status == 200 and "jsonapi_pyramid[docs-ui]" in body and "/api/openapi.json" in body
        status, _, _ = _request(f"{base}/docs/swagger-ui-bundle.js")
        assert status == 404
    finally:
        server.terminate()
        server.communicate(timeout=30)


def test_a_generated_project_installs_the_library_it_came_from(user_venv, tmp_path):
    """No package index carries jsonapi_pyramid yet: a project generated by the installed wheel
    brings that library in its wheels/ folder, and the install its Makefile runs (pip with
    ``--find-links wheels``) in a new environment takes it from there; then the project's own
    tests pass. The project's other dependencies come from pip's index (through its cache)."""
    _run([user_venv / "bin" / "jsonapi-pyramid-new", "shelf"], cwd=tmp_path, env=_user_environ())
    project = tmp_path / "shelf"
    (wheel,) = (project / "wheels").glob("jsonapi_pyramid-*.whl")
    assert wheel.name == f"jsonapi_pyramid-{jsonapi_pyramid.__version__}-py3-none-any.whl"
    makefile = (project / "Makefile").read_text()
    install = next(line.strip() for line in makefile.splitlines() if "-e '.[testing]'" in line)
    assert "--find-links wheels" in install, install
    venv = tmp_path / "project-venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv], env=_user_environ())
    python = venv / "bin" / "python"
    _run([sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--find-links", "wheels",
          "-e", ".[testing]"], cwd=project, env=_user_environ())
    probe = "import jsonapi_pyramid, importlib.metadata as m; print(jsonapi_pyramid.__file__, m.version('jsonapi_pyramid'))"
    where, version = _run([python, "-c", probe], cwd=tmp_path, env=_user_environ()).stdout.split()
    assert pathlib.Path(where).is_relative_to(venv) and version == jsonapi_pyramid.__version__
    result = _run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=project, env=_user_environ())
    assert re.search(r"\b13 passed\b", result.stdout), result.stdout
