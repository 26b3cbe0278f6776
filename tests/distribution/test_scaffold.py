"""``jsonapi-pyramid-new``: the project it writes passes its own tests and serves.

The project is written into a temporary folder and installed (editable, as its Makefile does) into
a new virtual environment layered on this one (its packages are this venv's: no network), then:
its own test suite runs there, its migrations run with ``alembic``, and ``pserve`` serves it for
one read and one authenticated write over HTTP on 127.0.0.1.
"""
from __future__ import annotations

import json
import os
import pathlib
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
import sysconfig
import urllib.request

import pytest

from jsonapi_pyramid.scaffold import DEVELOPMENT_TOKEN, create_project, render
from jsonapi_pyramid.security import hash_secret

pytestmark = pytest.mark.packaging

BIN = pathlib.Path(sys.executable).parent
ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module", autouse=True)
def this_checkouts_library(tmp_path_factory):
    """Every process below (the generator, the project's tests, alembic, pserve) imports this
    checkout's ``jsonapi_pyramid``, not the one the development venv's editable install points to
    (in a git worktree, another checkout's)."""
    folder = tmp_path_factory.mktemp("checkout")
    (folder / "jsonapi_pyramid").symlink_to(ROOT / "jsonapi_pyramid")
    previous = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (str(folder), previous)))
    yield
    if previous is None:
        del os.environ["PYTHONPATH"]
    else:
        os.environ["PYTHONPATH"] = previous


def _run(args, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run([str(a) for a in args], capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, f"{args}\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> pathlib.Path:
    directory = tmp_path_factory.mktemp("new") / "shelf"
    result = _run([BIN / "jsonapi-pyramid-new", "shelf", "--directory", directory])
    assert "make serve" in result.stdout
    return directory


@pytest.fixture(scope="module")
def python(project, tmp_path_factory) -> pathlib.Path:
    return _layered_venv(tmp_path_factory.mktemp("project-venv") / "venv", project)


def _layered_venv(venv: pathlib.Path, project: pathlib.Path) -> pathlib.Path:
    """A venv that sees this venv's packages (``site.addsitedir``, so their .pth files work too)
    and has the project installed into it, editable, with its entry points; its python."""
    _run([sys.executable, "-m", "venv", "--without-pip", venv])
    python = venv / "bin" / "python"
    site_packages = pathlib.Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    (site_packages / "_layered_on_dev.pth").write_text(f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n")
    _run([sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-deps", "--no-index",
          "--no-build-isolation", "-e", project])
    return python


def test_the_project_has_what_a_project_needs(project):
    names = {str(path.relative_to(project)) for path in project.rglob("*") if path.is_file()}
    assert {"setup.py", "Makefile", "development.ini", "production.ini", "README.md", ".gitignore", "schema.json",
            "shelf/__init__.py", "shelf/models.py", "shelf/resources.py", "shelf/security.py",
            "shelf/migrations/env.py", "shelf/migrations/versions/0001_notes.py",
            "shelf/server.py", "tests/conftest.py", "tests/test_notes.py", "tests/test_server.py",
            "tests/test_conformance.py"} <= names
    makefile = (project / "Makefile").read_text()
    assert "\nserve:" in makefile and "\ntest:" in makefile and "\t$(BIN)/pserve $(INI) http_port=$(PORT)" in makefile
    assert "\nPORT ?= 6543\n" in makefile  # make serve PORT=8080 (it was ignored)
    assert not [name for name in names if name.endswith("_tmpl")
                or (not name.startswith("wheels/") and "{{" in (project / name).read_text())]
    assert [name for name in names if name.startswith("wheels/jsonapi_pyramid-")]  # the library it came from
    assert f"{hash_secret(DEVELOPMENT_TOKEN)} developer editor" in (project / "development.ini").read_text()


def test_the_generator_refuses_bad_names_and_non_empty_folders(tmp_path, project):
    for name in ("Shelf", "2shelf", "my-shelf", "class", "json", "tests"):
        with pytest.raises(ValueError):
            create_project(name, tmp_path / name)
    with pytest.raises(FileExistsError):
        create_project("shelf", project)
    with pytest.raises(KeyError):
        render("{{nothing}}", {})


def test_the_project_passes_its_own_tests(project, python):
    result = _run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs"], cwd=project)
    # its own seven tests (six of notes, one of its runner), and the conformance kit's six cases for
    # notes (crud, errors, filter, sort, pages, stats)
    assert re.search(r"\b13 passed\b", result.stdout) and "skipped" not in result.stdout, result.stdout


def test_the_projects_schema_json_is_its_applications_schema(project, python):
    """The schema the generator writes is the one the generated application has, byte for byte."""
    result = _run([python, "-m", "jsonapi_pyramid.schemacli", "development.ini"], cwd=project)
    assert result.stdout == (project / "schema.json").read_text()


def test_make_test_fails_on_a_breaking_change_until_it_is_accepted(project, python):
    """``make test`` checks the application's schema against schema.json before the tests: a
    change that can break a client fails it; ``make schema`` accepts the change, and it passes."""
    stamp = python.parent.parent / ".installed"  # the layered venv has the project installed already
    stamp.touch()
    make = ["make", f"BIN={python.parent}", f"STAMP={stamp}"]
    resources, schema = project / "shelf" / "resources.py", project / "schema.json"
    declared, committed = resources.read_text(), schema.read_text()
    try:
        assert "13 passed" in _run([*make, "test"], cwd=project).stdout
        resources.write_text(declared.replace('filterable=("title", "createdAt")', 'filterable=("title",)'))
        failed = subprocess.run([*make, "test"], cwd=project, capture_output=True, text=True)
        assert failed.returncode != 0 and "BREAKING notes.createdAt: no longer filterable" in failed.stdout, failed.stdout
        assert "passed" not in failed.stdout  # the check comes first
        _run([*make, "schema"], cwd=project)
        assert schema.read_text() != committed
        assert "13 passed" in _run([*make, "test"], cwd=project).stdout
    finally:
        resources.write_text(declared)
        schema.write_text(committed)


def test_the_project_migrates_and_serves(project, python, tmp_path):
    ini = (project / "development.ini").read_text()
    # on 127.0.0.1, the port from the command line as `make serve PORT=...` gives it (0: any free one)
    assert "listen = localhost:%%(http_port)s" in ini
    ini = ini.replace("listen = localhost:", "listen = 127.0.0.1:")
    ini = ini.replace("sqlalchemy.url = sqlite:///%(here)s/var/shelf.sqlite", f"sqlalchemy.url = sqlite:///{tmp_path}/served.sqlite")
    (project / "served.ini").write_text(ini)
    _run([python, "-m", "alembic", "-c", "served.ini", "upgrade", "head"], cwd=project)
    server = subprocess.Popen([python, "-m", "pyramid.scripts.pserve", "served.ini", "http_port=0"], cwd=project,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        port = None
        for line in server.stderr:  # waitress logs "Serving on http://127.0.0.1:<port>"
            match = re.search(r"Serving on http://127\.0\.0\.1:(\d+)", line)
            if match:
                port = match[1]
                break
        assert port, "pserve did not start"
        body = json.dumps({"data": {"type": "notes", "attributes": {"title": "Served"}}}).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{port}/api/notes", data=body, headers={
            "Content-Type": "application/vnd.api+json", "Authorization": f"Bearer {DEVELOPMENT_TOKEN}"})
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.status == 201
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/notes", timeout=30) as response:
            document = json.loads(response.read())
        assert [note["attributes"]["title"] for note in document["data"]] == ["Served"]
    finally:
        server.terminate()
        server.communicate(timeout=30)


def test_a_database_driver_that_is_not_installed_is_named_with_its_install_command(project, python):
    """A PostgreSQL DATABASE_URL without psycopg failed on a bare "No module named 'psycopg'" in
    the migration (the first step of make serve) and at start-up. Here a driver that is not
    installed (pymysql) stands for it."""
    environment = {**os.environ, "DATABASE_URL": "mysql+pymysql://user@127.0.0.1/shelf"}
    migrate = subprocess.run([python, "-m", "alembic", "-c", "development.ini", "upgrade", "head"], cwd=project,
                             capture_output=True, text=True, env=environment)
    assert migrate.returncode != 0
    assert ("The database URL names the driver mysql+pymysql, whose module pymysql is not installed "
            "(PostgreSQL: .venv/bin/pip install -e '.[postgresql]')") in migrate.stderr, migrate.stderr
    start = subprocess.run([python, "-c", "from pyramid.paster import get_app; get_app('development.ini')"], cwd=project,
                           capture_output=True, text=True, env=environment)
    assert ("ConfigurationError: sqlalchemy.url names the database driver mysql+pymysql, whose module pymysql is not "
            "installed: pip install pymysql") in start.stderr, start.stderr


def test_the_generator_says_plainly_what_it_wrote(tmp_path, monkeypatch, capsys):
    """``--directory .`` names the folder it wrote (once ``Wrote ./.``), ``--help`` is plain text
    (once raw reStructuredText), and the project carries the library it came from."""
    from jsonapi_pyramid.scaffold import main

    monkeypatch.chdir(tmp_path)
    assert main(["shelf", "--directory", "."]) == 0
    out = capsys.readouterr().out
    assert f"in {tmp_path.resolve()}." in out and "./." not in out and "cd ." not in out
    assert list((tmp_path / "wheels").glob("jsonapi_pyramid-*-py3-none-any.whl"))
    with pytest.raises(SystemExit):
        main(["--help"])
    help_text = capsys.readouterr().out
    assert "``" not in help_text and "wheels/" in help_text


TUTORIAL = ROOT / "docs" / "tutorial"


def test_the_tutorial_grows_a_generated_project(tmp_path_factory):
    """docs/tutorial.rst, step by step on a new project: a database made by the first migration
    with a note in it; the tutorial's models, resources, second migration and tests copied in;
    the migration runs over the existing row, alembic finds nothing left between the models and
    the migrations, the project's tests (its own, the tutorial's, the conformance kit's for both
    types) pass, and its package is ``mypy --strict`` clean."""
    root = tmp_path_factory.mktemp("tutorial")
    project = root / "bookshelf"
    _run([BIN / "jsonapi-pyramid-new", "bookshelf", "--directory", project])
    python = _layered_venv(root / "venv", project)
    database = root / "notes.sqlite"
    ini = (project / "development.ini").read_text().replace(
        "sqlalchemy.url = sqlite:///%(here)s/var/bookshelf.sqlite", f"sqlalchemy.url = sqlite:///{database}")
    (project / "tutorial.ini").write_text(ini)
    _run([python, "-m", "alembic", "-c", "tutorial.ini", "upgrade", "head"], cwd=project)
    with sqlite3.connect(database) as connection:
        connection.execute("INSERT INTO notes (title, body, created_at) VALUES ('Before', '', '2026-01-01 00:00:00')")

    for name in ("models.py", "resources.py"):
        shutil.copy(TUTORIAL / name, project / "bookshelf" / name)
    # Step 2 followed literally: its autogenerate command writes the file the step then corrects
    # (a command that wrote a file of another name left two heads: "Multiple head revisions").
    command = re.search(r"\.venv/bin/alembic -c development\.ini (revision --autogenerate .*)",
                        (TUTORIAL.parent / "tutorial.rst").read_text())[1]
    _run([python, "-m", "alembic", "-c", "tutorial.ini", *shlex.split(command)], cwd=project)
    versions = project / "bookshelf" / "migrations" / "versions"
    assert sorted(path.name for path in versions.glob("*.py")) == ["0001_notes.py", "0002_notebooks.py"]
    shutil.copy(TUTORIAL / "0002_notebooks.py", versions / "0002_notebooks.py")
    for name in ("test_notebooks.py", "test_conformance.py"):
        shutil.copy(TUTORIAL / name, project / "tests" / name)
    _run([python, "-m", "alembic", "-c", "tutorial.ini", "upgrade", "head"], cwd=project)
    with sqlite3.connect(database) as connection:
        assert connection.execute("SELECT title, owner, pinned, notebook_id FROM notes").fetchall() == [("Before", "", 0, None)]
    assert "No new upgrade operations detected" in _run([python, "-m", "alembic", "-c", "tutorial.ini", "check"],
                                                        cwd=project).stdout
    result = _run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs"], cwd=project)
    assert re.search(r"\b26 passed\b", result.stdout) and "skipped" not in result.stdout, result.stdout
    # the tutorial only adds to the API: make test's schema check passes, printing the additions
    now = root / "schema-now.json"
    now.write_text(_run([python, "-m", "jsonapi_pyramid.schemacli", "tutorial.ini"], cwd=project).stdout)
    check = _run([python, "-m", "jsonapi_pyramid.schemacli", "check", "schema.json", now], cwd=project)
    assert check.stdout.splitlines() == ["added notebooks", "added notes.owner: attribute", "added notes.pinned: attribute",
                                         "added notes.notebook: relationship", "added notes.pin: operation POST on the item"]
    _run([python, "-m", "mypy"], cwd=project)


def test_the_generated_package_is_mypy_strict_clean(project, python):
    _run([python, "-m", "mypy"], cwd=project)
