"""Every private name of another package the code uses, listed and checked against the installed
version (DEVELOPMENT.md, "Other packages' private names").

(a) The library's and the reference service's sources are scanned for private attribute accesses
(``x._name`` on anything but ``self`` and ``cls``, ``getattr(x, "_name")``) and for imports of
private modules or names (``from pkg._mod import ...``): each must be in ``ALLOWED``, so a new one
fails here until it is listed, with its owner; so must every name imported from the undocumented
modules of ``INTERNAL``. (b) Each name of another package in ``ALLOWED`` and ``INTERNAL`` is
exercised against the installed version: it exists and behaves as the code assumes. setup.py
bounds those packages' versions; ``make test-newest`` runs the tests on the newest releases within
the bounds.
"""
from __future__ import annotations

import ast
import collections
import pathlib
import sqlite3
from urllib.parse import quote

import pytest
import waitress.server
from sqlalchemy import Column, Integer, MetaData, Table, create_engine, event, select, text
from sqlalchemy.engine import Row
from sqlalchemy.engine.result import result_tuple
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import sessionmaker
from sqlalchemy.sql.util import ClauseAdapter
from waitress.channel import HTTPChannel
from waitress.task import WSGITask
from webob import Request
from webob.compat import parse_qsl_text
from webob.request import PATH_SAFE
from zope.sqlalchemy import register

from jsonapi_pyramid import tm_join

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCANNED = ("jsonapi_pyramid", "jsonapi_blog")

#: (file, private name) -> (owner, how many uses). Owners: a package whose private name it is
#: (exercised below), "public" (documented public API that happens to start with "_"), or "own"
#: (the library's own, used across its modules).
ALLOWED = {
    # connection.py's driver path (DEVELOPMENT.md, lever 5)
    ("jsonapi_pyramid/connection.py", "_echo"): ("sqlalchemy", 1),
    ("jsonapi_pyramid/connection.py", "_has_events"): ("sqlalchemy", 3),
    ("jsonapi_pyramid/connection.py", "_handle_dbapi_exception"): ("sqlalchemy", 1),
    # the statement cache's key of a visibility criterion: SQLAlchemy's own cache key (no public one)
    ("jsonapi_pyramid/load/statements.py", "_generate_cache_key"): ("sqlalchemy", 2),
    # waitress has no public loop of one poll: jsonapi_blog/server.py runs its loop as BaseWSGIServer.run does
    ("jsonapi_blog/server.py", "_map"): ("waitress", 2),
    ("jsonapi_blog/server.py", "_exit"): ("public", 1),  # os._exit
    ("jsonapi_pyramid/load/tag_linkage.py", "_fields"): ("public", 1),  # Row._fields
    ("jsonapi_pyramid/load/held_keys.py", "_fields"): ("public", 1),  # Row._fields
    ("jsonapi_pyramid/openapi/stats.py", "_param"): ("own", 3),  # openapi.document's builder
    ("jsonapi_pyramid/openapi/stats.py", "_list_param"): ("own", 3),
    ("jsonapi_pyramid/parse/cursors.py", "_key"): ("own", 1),  # the cursor codec of the same module
    ("jsonapi_pyramid/parse/cursors.py", "_prefix"): ("own", 1),
}

#: Names without an underscore that another package's documentation does not list either (its
#: internals): (module, name) -> the files importing it. Checked below like the private ones.
INTERNAL = {
    ("sqlalchemy.engine.result", "result_tuple"): {"jsonapi_pyramid/connection.py", "jsonapi_pyramid/records.py",
                                                   "jsonapi_pyramid/write/plain_rules.py",
                                                   "jsonapi_pyramid/load/tag_linkage.py"},
    ("sqlalchemy.sql.util", "ClauseAdapter"): {"jsonapi_pyramid/load/filtering.py", "jsonapi_pyramid/load/sorting.py",
                                               "jsonapi_pyramid/load/stats_sql.py"},
    ("webob.request", "PATH_SAFE"): {"jsonapi_pyramid/urls.py"},
    ("webob.compat", "parse_qsl_text"): {"jsonapi_pyramid/urls.py"},
}


def private_names(source: str) -> list[str]:
    """The private names ``source`` uses of objects other than ``self`` and ``cls`` (one entry a use)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and _private(node.attr) and ast.unparse(node.value) not in ("self", "cls"):
            found.append(node.attr)
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("getattr", "hasattr", "setattr") \
                and len(node.args) > 1 and isinstance(node.args[1], ast.Constant) and _private(str(node.args[1].value)):
            found.append(str(node.args[1].value))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module != "__future__":
            parts = [*(node.module or "").split("."), *(alias.name for alias in node.names)]
            found.extend(f"import {part}" for part in parts if _private(part))
    return found


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def used_private_names() -> dict[tuple[str, str], int]:
    counts: collections.Counter[tuple[str, str]] = collections.Counter()
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for name in private_names(path.read_text()):
                counts[(str(path.relative_to(ROOT)), name)] += 1
    return dict(counts)


def test_every_private_name_used_is_listed():
    assert used_private_names() == {key: uses for key, (_owner, uses) in ALLOWED.items()}, \
        "a private name of another package: use its public API, or list it in ALLOWED and check it below"


def test_every_internal_name_imported_from_those_modules_is_listed():
    modules = {module for module, _name in INTERNAL}
    found: dict[tuple[str, str], set[str]] = {}
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and node.module in modules:
                    for alias in node.names:
                        found.setdefault((node.module, alias.name), set()).add(str(path.relative_to(ROOT)))
    assert found == INTERNAL


def test_the_scan_finds_each_form():
    source = ("from transaction._transaction import Status\nfrom zope import _hidden\n"
              "x = connection._echo\ny = getattr(engine, '_has_events')\nself._own = cls._own\nz = type.__name__\n")
    assert sorted(private_names(source)) == ["_echo", "_has_events", "import _hidden", "import _transaction"]


# (b) each name of another package, against the installed version

@pytest.fixture
def engine():
    engine = create_engine("sqlite://")
    yield engine
    engine.dispose()


def test_sqlalchemy_connection_echo_is_the_engines_echo():
    for echo in (False, True):
        engine = create_engine("sqlite://", echo=echo)
        with engine.connect() as connection:
            assert bool(connection._echo) is echo
        engine.dispose()


def test_sqlalchemy_has_events_says_whether_anyone_listens(engine):
    """connection.py: ``_has_events`` of the connection or the engine is False while nobody listens;
    a connection's says only whether anyone listens to the connection itself (so both are read)."""
    with engine.connect() as connection:
        assert not connection._has_events and not engine._has_events
        event.listen(connection, "before_cursor_execute", lambda *args: None)
        assert connection._has_events
    event.listen(engine, "before_cursor_execute", lambda *args: None)
    assert engine._has_events
    with engine.connect() as connection:
        assert not connection._has_events  # the engine's listeners are the engine's


def test_sqlalchemy_handle_dbapi_exception_wraps_the_drivers_error_and_calls_handle_error(engine):
    """connection.py runs a kept statement on the DBAPI cursor and hands a driver error to
    ``Connection._handle_dbapi_exception``: SQLAlchemy's error (its ``orig`` the driver's) is raised
    and the engine's ``handle_error`` listeners are called, as on SQLAlchemy's own path."""
    seen = []
    event.listen(engine, "handle_error", lambda context: seen.append(context.original_exception))
    with engine.connect() as connection:
        cursor = connection.connection.cursor()
        try:
            cursor.execute("SELECT nothing FROM nowhere", ())
        except sqlite3.OperationalError as exc:
            with pytest.raises(OperationalError) as raised:
                connection._handle_dbapi_exception(exc, "SELECT nothing FROM nowhere", (), cursor, None)
            assert raised.value.orig is exc and seen == [exc]
        else:
            pytest.fail("the statement ran")
        assert connection.execute(text("SELECT 1")).scalar_one() == 1  # the connection is still usable


def test_sqlalchemy_cache_key_is_the_structure_and_the_bound_values_in_order():
    """load/statements.py: two criteria of one shape have one key, their values in ``bindparams`` in order."""
    table = Table("t", MetaData(), Column("a", Integer), Column("b", Integer))
    first = ((table.c.a == 1) & (table.c.b > 2))._generate_cache_key()
    second = ((table.c.a == 3) & (table.c.b > 4))._generate_cache_key()
    other = (table.c.b == 1)._generate_cache_key()
    assert first.key == second.key != other.key
    assert [bind.effective_value for bind in first.bindparams] == [1, 2]
    assert [bind.effective_value for bind in second.bindparams] == [3, 4]
    assert select(table).where(table.c.a == 1)._generate_cache_key() is not None


def test_waitress_map_holds_the_server_and_its_channels():
    """jsonapi_blog/server.py runs waitress's loop itself, one poll at a time, over ``server._map``
    (what ``BaseWSGIServer.run`` passes to ``asyncore.loop``), and counts its channels there."""
    server = waitress.server.create_server(lambda environ, start_response: [], listen="127.0.0.1:0")
    try:
        assert isinstance(server, waitress.server.BaseWSGIServer)
        assert server in server._map.values()
        server.asyncore.loop(timeout=0, map=server._map, use_poll=server.adj.asyncore_use_poll, count=1)
        assert server.adj.asyncore_loop_timeout > 0 and callable(server.task_dispatcher.shutdown)
        assert server.channel_class is HTTPChannel and HTTPChannel.task_class is WSGITask  # server.py replaces them
        for name in ("build_response_header", "set_close_on_finish"):  # what server.py's task overrides
            assert callable(getattr(WSGITask, name)), name
    finally:
        server.close()


def test_zope_sqlalchemy_register_listens_to_the_events_tm_join_takes_over(tmp_path):
    """tm_join.py registers, once on the factory, a listener for each event ``register()`` listens
    to on each session, and hands it to zope.sqlalchemy's own ``ZopeTransactionEvents``: the same
    events, or a newer zope.sqlalchemy's would be missed."""
    engine = create_engine(f"sqlite:///{tmp_path / 'z.sqlite'}")
    session = sessionmaker(bind=engine)()
    names = {name for name in dir(session.dispatch) if not name.startswith("_")}
    before = {name: len(getattr(session.dispatch, name)) for name in names}
    register(session)
    registered = {name for name in names if len(getattr(session.dispatch, name)) > before[name]}
    assert registered == {name for name, _listener in tm_join.LISTENERS}
    session.close()
    engine.dispose()


def test_sqlalchemy_result_tuple_makes_rows_of_the_keys_given():
    """connection.py, records.py, tag_linkage.py, write/plain_rules.py: ``result_tuple(keys)`` makes ``Row`` objects
    (attribute and index access, ``_fields``, ``_mapping``) of plain tuples."""
    make = result_tuple(["title", "user_id"])
    row = make(("Hello", 7))
    assert isinstance(row, Row) and row.title == "Hello" and row[1] == 7 and tuple(row) == ("Hello", 7)
    assert row._fields == ("title", "user_id") and row._mapping["user_id"] == 7


def test_sqlalchemy_clause_adapter_moves_a_criterion_onto_an_alias():
    """filtering.py, sorting.py, stats_sql.py: a visibility criterion written on a table, adapted to
    the alias a join or a subquery reads it through."""
    table = Table("articles", MetaData(), Column("id", Integer), Column("status", Integer))
    alias = table.alias("seen")
    adapted = ClauseAdapter(alias).traverse(table.c.status == 1)
    assert str(adapted.compile()) == "seen.status = :status_1"


def test_webob_path_safe_is_what_webob_leaves_unquoted_in_path_url():
    """urls.py quotes a path with WebOb's ``PATH_SAFE``, so its URLs are ``request.path_url``'s."""
    path = "/api/a b;c=d@e:f~g(h)/i'j!k$l*m+n,o"
    request = Request.blank("/")
    request.path_info = path
    assert request.path_url == request.application_url + quote(path, PATH_SAFE)


@pytest.mark.parametrize("query", ["", "a=1&b=2", "a=1;b=2&a=3", "x+y=%2B%20z&empty=&bare", "filter%5Bname%5D=%C3%A9t%C3%A9",
                                   "page[size]=1&&page[number]=2"])
def test_webob_parse_qsl_text_is_what_request_get_holds(query):
    """urls.py's ``query_items``: the pairs of ``request.GET``, decoded the same way,
    without WebOb's per-request cache (a cycle through the environ)."""
    request = Request.blank("/?" + query)
    assert list(parse_qsl_text(query)) == list(request.GET.items())


def test_webob_parse_qsl_text_refuses_what_request_get_refuses():
    with pytest.raises(UnicodeDecodeError):
        list(parse_qsl_text("a=%FF"))
    with pytest.raises(UnicodeDecodeError):
        _ = Request.blank("/?a=%FF").GET
