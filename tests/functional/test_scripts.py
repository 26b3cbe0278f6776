"""Scripts write through ``request.tm`` the way the Pyramid cookiecutter's scripts do.

``pyramid.paster.bootstrap``, ``pshell`` and ``Request.blank`` + ``apply_request_extensions``
give a request that no HTTP server served: its ``request.dbsession`` is joined to ``request.tm``,
so ``with request.tm:`` commits what the block changed (and rolls it back when it raises). An
HTTP read keeps its own Core connection, rolled back at its end (``db.read_connection``).
"""
from __future__ import annotations

import pytest
from pyramid.paster import bootstrap
from pyramid.request import Request, apply_request_extensions
from pyramid.response import Response
from pyramid.scripts.pshell import PShellCommand
from sqlalchemy import func, select
from webtest import TestApp

from jsonapi_blog.models import Tag
from jsonapi_pyramid.connection import execute
from tests.conftest import APP_SETTINGS, blog_parts_app


@pytest.fixture
def ini(tmp_path, database_url, monkeypatch):
    """An ini file of the reference service on the test database, with pshell's set-up."""
    monkeypatch.delenv("DATABASE_URL", raising=False)
    settings = "\n".join(f"{name} = {value}" for name, value in APP_SETTINGS.items())
    path = tmp_path / "script.ini"
    path.write_text(f"[app:main]\nuse = egg:jsonapi_blog\nsqlalchemy.url = {database_url}\n{settings}\n\n"
                    "[pshell]\nsetup = jsonapi_pyramid.db.pshell_setup\n")
    return str(path)


@pytest.fixture
def script(ini):
    """``with script() as env:`` ``bootstrap(ini)``, its engine disposed afterwards."""
    import contextlib

    @contextlib.contextmanager
    def run():
        with bootstrap(ini) as env:
            try:
                yield env
            finally:
                env["registry"]["db.engine"].dispose()

    return run


def _tag_names(db):
    db.rollback()  # a new transaction: see what the script committed
    return set(db.scalars(select(Tag.name)))


def test_bootstrap_commits_what_request_tm_wraps(script, db):
    with script() as env, env["request"].tm:
        env["request"].dbsession.add(Tag(name="from-a-script"))
    assert _tag_names(db) == {"from-a-script"}


def test_a_session_taken_before_the_transaction_joins_it(script, db):
    with script() as env:
        session = env["request"].dbsession
        with env["request"].tm:
            session.add(Tag(name="taken-before"))
    assert _tag_names(db) == {"taken-before"}


def test_a_script_that_raises_changes_nothing(script, db):
    with script() as env, pytest.raises(RuntimeError), env["request"].tm:
        env["request"].dbsession.add(Tag(name="never"))
        env["request"].dbsession.flush()
        raise RuntimeError("the script failed")
    assert _tag_names(db) == set()


def test_blank_post_with_request_extensions_commits(script, db):
    with script() as env:
        request = Request.blank("/api/tags", method="POST")
        request.registry = env["registry"]
        apply_request_extensions(request)
        with request.tm:
            request.dbsession.add(Tag(name="from-a-blank-request"))
        request._process_finished_callbacks()
    assert _tag_names(db) == {"from-a-blank-request"}


def test_library_statements_of_a_script_run_in_its_transaction(script, db):
    """``request.dbconnection`` (the library's statements) is the script's session's connection:
    they see the script's changes before the commit."""
    with script() as env, env["request"].tm:
        request = env["request"]
        request.dbsession.add(Tag(name="seen"))
        assert request.dbconnection is request.dbsession.connection()
        assert execute(request, select(func.count()).select_from(Tag)).scalar() == 1
    assert _tag_names(db) == {"seen"}


def test_pshell_setup_gives_tm_and_dbsession(ini, db):
    """``pshell`` with ``[pshell] setup = jsonapi_pyramid.db.pshell_setup``: ``tm`` and ``dbsession``
    in the shell; ``tm.commit()`` commits, what is left uncommitted when the shell ends is rolled back."""

    def shell(env, help):  # noqa: A002 - pshell's signature
        env["dbsession"].add(Tag(name="committed-in-pshell"))
        env["tm"].commit()
        env["tm"].begin()
        env["dbsession"].add(Tag(name="left-uncommitted"))
        env["dbsession"].flush()
        registries.append(env["registry"])

    registries: list = []
    command = PShellCommand(["pshell", ini], quiet=True)
    command.run(shell=shell)
    registries[0]["db.engine"].dispose()
    assert _tag_names(db) == {"committed-in-pshell"}


def test_an_http_read_still_rolls_back_what_it_flushed(database_url, db):
    """A GET keeps its read connection: what a read flushes through ``request.dbsession`` is
    rolled back, as before (writes belong to POST, PATCH and DELETE)."""

    def extra(config):
        def flush_in_a_read(request):
            request.dbsession.add(Tag(name="flushed-in-a-read"))
            request.dbsession.flush()
            return Response("ok")

        config.add_route("read_that_writes", "/read-that-writes")
        config.add_view(flush_in_a_read, route_name="read_that_writes", request_method="GET")

    app = blog_parts_app(database_url, extra)
    try:
        TestApp(app).get("/read-that-writes", status=200)
    finally:
        app.registry["db.engine"].dispose()
    assert _tag_names(db) == set()
