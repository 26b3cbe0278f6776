"""The connection the library's statements run on.

``jsonapi_pyramid.db`` gives each HTTP request one Core connection of its own,
``request.dbconnection``, with no ORM session unless something asks for ``request.dbsession``
(which is then bound to that connection, in its transaction): a read's ends with the request, a
write's is joined to pyramid_tm's transaction (``transactions.py``); in scripts it is the
session's. The library runs every statement that needs no mapped
instance on it (``execute``: records, ids, counts), and only those that load mapped instances
(polymorphic families, ``entities = True`` transformers, writes) through ``request.dbsession``.
An application that provides ``request.dbsession`` itself, without ``jsonapi_pyramid.db``, gets
its session's connection.

Kept statements on the driver: a ``Select`` the application's ``load.statements.StatementCache`` keeps
(noted in its ``on_driver``, per application, with its compiled forms per dialect) is compiled
by SQLAlchemy on its first run; after it (on a read, or in a write once the session's pending
changes are flushed, as the row a write reads back), ``execute`` runs its SQL string on the DBAPI
cursor itself with the bind and result processors SQLAlchemy's types give
(``_Form``), with no execution context per run. Whatever SQLAlchemy would do more takes its own
path (``_Form.ready``): a listener of the engine's execution events (statement recorders; not
SQLite's deadline, whose start ``_Form.run`` sets itself), a dialect listener besides the
library's metrics, a span recording the statement, echo, execution options, positional dialects
that set input sizes, expanding parameters.
"""
from __future__ import annotations

from typing import Any

from pyramid.request import Request
from sqlalchemy import event
from sqlalchemy.engine.interfaces import BindTyping
from sqlalchemy.engine.result import result_tuple
from sqlalchemy.exc import MultipleResultsFound, NoResultFound
from sqlalchemy.sql import Select

from .deadlines import runs_with_driver, start_statement

__all__ = ["FOREIGN_KEYS_ON", "READS", "WRITE_SESSION_EVENTS", "connection_of", "dialect_name", "execute", "flush_session",
           "foreign_keys_on", "read_rows", "session_events",
           "session_or_none", "utc_sessions", "with_transaction", "without_transaction"]

#: the methods that read: pyramid_tm leaves them alone (``db.writes_only``), and traversal loads
#: their item as a record (``traversal.Item``)
READS = frozenset(("GET", "HEAD", "OPTIONS"))

#: set by ``jsonapi_pyramid.db``: the request has ``request.dbconnection``
_ENGINE = "db.engine"
#: set by ``jsonapi_pyramid.db``: the events of a session of the writes' factory (``session_events``)
WRITE_SESSION_EVENTS = "db.write_session_events"
#: set by ``jsonapi_pyramid.db`` in a pooled SQLite connection's ``info``: it enforces foreign keys
FOREIGN_KEYS_ON = "jsonapi.foreign_keys_on"


def connection_of(request: Request) -> Any:
    """The request's connection (``request.dbconnection``, else its session's)."""
    if _ENGINE in request.registry:
        return request.dbconnection
    return request.dbsession.connection()


def session_or_none(request: Request) -> Any:
    """The request's ORM session when one was made (under ``jsonapi_pyramid.db`` an HTTP request
    has one only when something asked for it), else None; without ``jsonapi_pyramid.db``, the
    application's ``request.dbsession``."""
    if _ENGINE in request.registry:
        return request.__dict__.get("dbsession")
    return request.dbsession


def flush_session(request: Request) -> None:
    """Flush the pending changes of the request's ORM session, when it has one (``session_or_none``):
    a statement run next sees them."""
    session = session_or_none(request)
    if session is not None:
        session.flush()


def session_events(request: Request, session: Any) -> Any:
    """The session events (``dispatch``) of ``session``, or, when there is none (``session_or_none``),
    those the request's session would have: its factory's and ``Session``'s listeners, as listened
    to now (``db.includeme`` keeps a session of the writes' factory, made for this only)."""
    return session.dispatch if session is not None else request.registry[WRITE_SESSION_EVENTS]


def foreign_keys_on(request: Request) -> bool:
    """Whether the request's connection enforces every foreign key, checked by each statement unless
    declared deferrable: always on PostgreSQL; on SQLite where ``jsonapi_pyramid.db``'s engine
    turned them on (``PRAGMA foreign_keys=ON`` when it connected, noted in the pooled connection's
    ``info``); elsewhere not relied on."""
    connection = connection_of(request)
    name = connection.dialect.name
    return name == "postgresql" or (name == "sqlite" and bool(connection.connection.info.get(FOREIGN_KEYS_ON)))


def dialect_name(request: Request) -> str:
    """The name of the database's dialect (``"sqlite"``, ``"postgresql"``), without a session."""
    return str(connection_of(request).dialect.name)


def execute(request: Request, statement: Any, parameters: Any = None) -> Any:
    """The result of ``statement`` on the request's connection, in its transaction, without the
    ORM's result processing. The pending changes of the request's session, when it has one, are
    flushed first, as the ORM's autoflush would: a write's statements see its own changes."""
    if _ENGINE in request.registry:
        connection = request.dbconnection
        session = request.__dict__.get("dbsession")  # made only if something asked (in scripts: with the connection)
    else:
        session = request.dbsession
        connection = session.connection()
    if session is not None and session.autoflush:
        session.flush()
    if parameters is not None:
        forms = request.registry.jsonapi.statements.on_driver.get(statement)
        if forms is not None:
            form = forms.get(connection.dialect, _NEW)
            if form is _NEW:
                form = forms[connection.dialect] = _Form.of(statement, connection.dialect)
            if form is not None:
                if form.keys is None:
                    return form.learn(connection.execute(statement, parameters))
                if form.make is not None and form.ready(request, connection):
                    return form.run(connection, parameters)
    return connection.execute(statement, parameters)


def read_rows(request: Request, statement: Any, parameters: Any = None, *, kept: bool = False) -> list[Any]:
    """The rows (``Row`` objects) of ``statement``, a ``select()``, on the request's connection
    (``request.dbconnection``), in its transaction, the pending changes of the request's session
    flushed first: what the library's own statements run on.

    ``kept=True`` for one statement object the application runs again and again (built once, its
    values as ``bindparam()`` given in ``parameters``, as a module-level constant): after
    SQLAlchemy's first run of it, it runs on the database driver, as the library's kept statements
    do (docs: "The read path"), whenever SQLAlchemy would do nothing more. A statement built anew
    per call must not be kept (each would be compiled twice)."""
    if kept and isinstance(statement, Select):
        request.registry.jsonapi.statements.on_driver.setdefault(statement, {})
    return list(execute(request, statement, {} if parameters is None else parameters).all())


def utc_sessions(engine: Any) -> None:
    """PostgreSQL: every connection of ``engine`` in the time zone UTC, whatever the server's, so
    that timestamps are one value everywhere: a ``timestamptz`` reads back in UTC (shown with
    ``Z``), a filter's naive UTC value compares as UTC, and ``now()`` into a ``timestamp`` is UTC."""
    if engine.dialect.name == "postgresql":
        event.listen(engine, "connect", _utc_session)


def _utc_session(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("SET TIME ZONE 'UTC'")
    cursor.close()
    dbapi_connection.commit()  # the session default of this connection, not one transaction's


def without_transaction(connection: Any) -> None:
    """A read's connection on PostgreSQL at READ COMMITTED (psycopg): its statements run without a
    transaction block (the DBAPI connection's ``autocommit``), sparing the database a ``BEGIN``
    and a ``COMMIT`` per read. At READ COMMITTED every statement reads its own snapshot, in a
    transaction block or not; at REPEATABLE READ or SERIALIZABLE a read keeps its transaction,
    so that its statements read one snapshot. ``with_transaction`` undoes it."""
    dialect = connection.dialect
    if dialect.driver in _AUTOCOMMIT_DRIVERS and dialect.default_isolation_level == "READ COMMITTED":
        connection.connection.dbapi_connection.autocommit = True
        connection.info[_WITHOUT_TRANSACTION] = True


def ends_with_commit(connection: Any) -> bool:
    """Whether a read that changed nothing should end its transaction with COMMIT rather than
    ROLLBACK: psycopg in a transaction block, which drops its prepared statements at a ROLLBACK (so
    every read would plan its statements again). Elsewhere a ROLLBACK costs nothing more: a
    connection without a transaction block (``without_transaction``) sends neither, SQLite keeps
    its statement cache either way. Asked before ``with_transaction``."""
    return connection.dialect.driver in _AUTOCOMMIT_DRIVERS and not connection.info.get(_WITHOUT_TRANSACTION)


def with_transaction(connection: Any) -> None:
    """The statements that follow run in a transaction again (``without_transaction``): a read's
    session, which may flush, runs in one (rolled back at the read's end when it flushed)."""
    # the driver first: ``Connection.info`` costs SQLite's reads four calls for nothing
    if connection.dialect.driver in _AUTOCOMMIT_DRIVERS and connection.info.pop(_WITHOUT_TRANSACTION, False):
        dbapi_connection = connection.connection.dbapi_connection
        if dbapi_connection is not None:
            dbapi_connection.autocommit = False


_NEW = object()
_AUTOCOMMIT_DRIVERS = frozenset(("psycopg", "psycopg2"))
_WITHOUT_TRANSACTION = "jsonapi.without_transaction"


class _Rows(list[Any]):
    """The rows of a statement run on the driver, with the methods of a result the library asks."""

    def all(self) -> list[Any]:
        return self

    def first(self) -> Any:
        return self[0] if self else None

    def one(self) -> Any:
        if len(self) != 1:
            raise (MultipleResultsFound if self else NoResultFound)(
                "Multiple rows were found when exactly one was required" if self else "No row was found when one was required")
        return self[0]


class _Form:
    """A kept statement compiled for one dialect: its SQL string, bind processors and parameter
    order; after its first run through SQLAlchemy (``learn``), its row keys and result processors."""

    __slots__ = ("binds", "compiled", "keys", "make", "positions", "processors", "statement", "string")

    def __init__(self, statement: Any, compiled: Any, binds: tuple[Any, ...]) -> None:
        self.statement, self.compiled, self.string, self.binds = statement, compiled, compiled.string, binds
        self.positions = compiled.positiontup
        self.keys: Any = None
        self.processors: tuple[Any, ...] = ()
        self.make: Any = None

    @classmethod
    def of(cls, statement: Any, dialect: Any) -> _Form | None:
        """The form of ``statement`` on ``dialect``; None when SQLAlchemy must run it (execution
        options, input sizes, parameters expanded or escaped per run)."""
        if statement.get_execution_options() or dialect.bind_typing is BindTyping.SETINPUTSIZES:
            return None
        compiled = statement.compile(dialect=dialect)
        if compiled.literal_execute_params or compiled.post_compile_params or compiled.escaped_bind_names:
            return None
        if compiled.insert_prefetch or compiled.update_prefetch:
            return None  # an INSERT in its WITH with Python-side defaults: SQLAlchemy's execution context computes them
        # One processor per parameter name, as SQLAlchemy applies them: a statement may hold one
        # parameter in several places (an item's id in its row and in its tag's linkage part),
        # and a processor applied twice to its own output fails (Uuid on SQLite: str has no .hex).
        binds: dict[str, Any] = {}
        for bind, name in compiled.bind_names.items():
            if name not in binds:
                binds[name] = bind.type.dialect_impl(dialect).bind_processor(dialect)
        return cls(statement, compiled, tuple((name, process) for name, process in binds.items() if process is not None))

    def learn(self, result: Any) -> Any:
        """The row keys and result processors of SQLAlchemy's first run (``result``, returned);
        a statement whose columns do not match the cursor's stays SQLAlchemy's (``make`` None)."""
        description = result.cursor.description if result.cursor is not None else None
        columns = self.statement.exported_columns  # a select's columns, or what an INSERT returns
        keys = tuple(result.keys())
        if description is not None and len(description) == len(columns) == len(keys):
            dialect = result.context.dialect
            processors = ((index, column.type.dialect_impl(dialect).result_processor(dialect, described[1]))
                          for index, (column, described) in enumerate(zip(columns, description)))
            self.processors = tuple((index, process) for index, process in processors if process is not None)
            self.make = result_tuple(keys)
        self.keys = keys
        return result

    def ready(self, request: Request, connection: Any) -> bool:
        """Whether the driver may run it on ``connection`` with nothing SQLAlchemy would do left
        out; a statement it runs is counted in the request's metrics."""
        if connection._echo or connection.get_execution_options():
            return False
        engine = connection.engine
        if connection._has_events or engine._has_events:  # SQLAlchemy's own test: is anyone listening?
            if connection._has_events:
                return False
            # (a handle_error listener, as db.py's on PostgreSQL, is fine; so is a SQLite deadline's start, done in ``run``)
            dispatch = engine.dispatch
            if (dispatch.before_execute or dispatch.after_execute or dispatch.after_cursor_execute
                    or not all(map(runs_with_driver, dispatch.before_cursor_execute))):
                return False
        observability = request.registry.get("jsonapi.observability")
        if len(connection.dialect.dispatch.do_execute) != (0 if observability is None else 1):
            return False
        return observability is None or observability.driver_statement()

    def run(self, connection: Any, parameters: Any) -> _Rows:
        values = self.compiled.construct_params(parameters)
        for name, process in self.binds:
            values[name] = process(values[name])
        arguments = values if self.positions is None else tuple([values[name] for name in self.positions])
        if not connection.in_transaction():
            connection.begin()  # as SQLAlchemy's autobegin: the connection's close rolls it back
        start_statement(connection)  # SQLite under a deadline: this statement's (``deadlines.py``)
        cursor = connection.connection.cursor()
        try:
            cursor.execute(self.string, arguments)
            rows = cursor.fetchall()
        except Exception as exc:  # noqa: BLE001 - wrapped and raised by SQLAlchemy, as on its own path
            connection._handle_dbapi_exception(exc, self.string, arguments, cursor, None)
        cursor.close()
        if self.processors:  # column by column, each processor mapped over its column
            columns = list(zip(*rows))
            if columns:
                for index, process in self.processors:
                    columns[index] = map(process, columns[index])
                rows = zip(*columns)
        return _Rows(map(self.make, rows))
