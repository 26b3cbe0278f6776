"""Joining ``request.tm``: zope.sqlalchemy's session events, registered once on the session factory
instead of per session; and the data manager of a write's Core connection (``WriteConnection``).

``zope.sqlalchemy.register(session, transaction_manager=request.tm)`` adds seven event listeners
to each session it is given; with pyramid_tm's ``explicit_manager`` (a transaction manager per
request) that meant seven listeners added to a new session on every write request, the larger
part of the cost being SQLAlchemy's event registry, not the transaction. Here seven listeners are
registered once, on the factory (every session it makes), and each hands its event to the
session's own ``zope.sqlalchemy.ZopeTransactionEvents`` (zope.sqlalchemy's public class, with its
defaults: ``initial_state`` active, ``keep_session`` false) that ``joined_session`` keeps in
``session.info[TRANSACTION_EVENTS]`` for the session's transaction manager. A session made without
one (a read's, a tool's) is left alone, exactly as a session nobody registered. What each event
does is thus zope.sqlalchemy's own, through its public API:

* ``after_begin``, ``after_attach``: join the session to the manager's current transaction (once:
  a session already joined is left as it is);
* ``after_flush``, ``after_bulk_update``, ``after_bulk_delete``, ``do_orm_execute`` of an ORM
  INSERT, UPDATE or DELETE: mark it changed (the transaction then commits it, rather than rolls
  it back as a read-only one);
* ``before_commit``: refuse a commit the transaction manager did not start (outside a nested
  transaction): views never commit.

Raw SQL (``session.execute(text(...))``) is not marked: call ``zope.sqlalchemy.mark_changed`` on
the session, as with ``register``.
"""
from __future__ import annotations

import contextlib
from typing import Any

from sqlalchemy import event
from transaction.interfaces import ISavepointDataManager
from zope.interface import implementer
from zope.sqlalchemy import ZopeTransactionEvents
from zope.sqlalchemy.datamanager import STATUS_CHANGED

__all__ = ["FLUSHED", "FLUSH_LISTENERS", "LISTENERS", "TRANSACTION_EVENTS", "TRANSACTION_MANAGER", "WriteConnection",
           "joined_session", "note_flush", "register_on_factory"]

#: The key of ``session.info`` that holds the transaction manager a session is joined to.
TRANSACTION_MANAGER = "transaction_manager"
#: The key of ``session.info`` that holds the session's ``ZopeTransactionEvents`` (for that manager).
TRANSACTION_EVENTS = "jsonapi.transaction_events"
#: The key of ``session.info`` set once the session flushed (``note_flush``).
FLUSHED = "jsonapi.flushed"


def register_on_factory(factory: Any) -> None:
    """Register the listeners on ``factory`` (a sessionmaker, or a Session class), once."""
    for name, listener in LISTENERS:
        event.listen(factory, name, listener)


def joined_session(factory: Any, transaction_manager: Any, request: Any, connection: Any = None) -> Any:
    """A session of ``factory`` (one ``register_on_factory`` was applied to) joined to
    ``transaction_manager`` by the factory's listeners. ``connection``: a write's own
    (``WriteConnection``'s), in its transaction: the session is bound to it and takes that
    transaction over (``control_fully``: the session's commit is the connection's), joined as
    changed, so that what the connection wrote before the session was made is committed with it."""
    info = {"request": request, TRANSACTION_MANAGER: transaction_manager}
    if connection is None:
        info[TRANSACTION_EVENTS] = ZopeTransactionEvents(transaction_manager=transaction_manager)
        return factory(info=info)
    info[TRANSACTION_EVENTS] = ZopeTransactionEvents(initial_state=STATUS_CHANGED, transaction_manager=transaction_manager)
    return factory(info=info, bind=connection, join_transaction_mode="control_fully")


def registered_on(factory: Any) -> bool:
    """Whether ``register_on_factory`` was applied to ``factory``."""
    return bool(event.contains(factory, "after_begin", _after_begin))


def _after_begin(session: Any, transaction: Any, connection: Any) -> None:
    events = session.info.get(TRANSACTION_EVENTS)
    if events is not None:
        events.after_begin(session, transaction, connection)


def _after_attach(session: Any, instance: Any) -> None:
    events = session.info.get(TRANSACTION_EVENTS)
    if events is not None:
        events.after_attach(session, instance)


def _after_flush(session: Any, flush_context: Any) -> None:
    events = session.info.get(TRANSACTION_EVENTS)
    if events is not None:
        events.after_flush(session, flush_context)


def _after_bulk_update(context: Any) -> None:
    events = context.session.info.get(TRANSACTION_EVENTS)
    if events is not None:
        events.after_bulk_update(context)


def _after_bulk_delete(context: Any) -> None:
    events = context.session.info.get(TRANSACTION_EVENTS)
    if events is not None:
        events.after_bulk_delete(context)


def _do_orm_execute(state: Any) -> None:
    events = state.session.info.get(TRANSACTION_EVENTS)
    if events is not None:
        events.do_orm_execute(state)


def note_flush(session: Any, _flush_context: Any) -> None:
    """``after_flush`` of every session of ``db.get_session_factory``: a read that flushed is
    warned about when its connection closes (``db.read_connection``)."""
    session.info[FLUSHED] = True


#: The library's own ``after_flush`` listeners: a write made without a flush
#: (``plain_writes``) calls them after its statement, as a flush would.
FLUSH_LISTENERS = (_after_flush, note_flush)


def _before_commit(session: Any) -> None:
    events = session.info.get(TRANSACTION_EVENTS)
    if events is not None:
        events.before_commit(session)


#: The session events zope.sqlalchemy's ``register()`` listens to (the same seven, checked by
#: tests/unit/test_private_names.py against the installed version), each with its listener here.
LISTENERS = (
    ("after_begin", _after_begin),
    ("after_attach", _after_attach),
    ("after_flush", _after_flush),
    ("after_bulk_update", _after_bulk_update),
    ("after_bulk_delete", _after_bulk_delete),
    ("before_commit", _before_commit),
    ("do_orm_execute", _do_orm_execute),
)


@implementer(ISavepointDataManager)
class WriteConnection:
    """The data manager of a write's Core connection (``transactions.write_connection``), joined to
    the request's transaction: COMMIT when it commits (in ``tpc_vote``, as zope.sqlalchemy's
    one-phase data manager: a COMMIT the database refuses aborts the transaction and raises),
    ROLLBACK when it aborts. ``committing(request)`` is called just before the COMMIT,
    ``committed(request)`` after it.

    A session made on the connection (``joined_session``) takes its transaction over once it uses
    it; zope.sqlalchemy's data manager then commits it (or rolls it back). This one sorts after
    that one (``sortKey``) and ends what is left: the connection's transaction when no session
    took it (none was made, or one that only held instances), nothing when one did.

    It is registered as a synchronizer of the request's transaction manager (``registerSynch``),
    which joins it to the current transaction and to each one begun after it: an application that
    commits in the middle of a request (``request.tm.commit(); request.tm.begin()``) has what the
    connection does next committed with the next transaction too."""

    def __init__(self, request: Any, connection: Any, committing: Any, committed: Any) -> None:
        self.request = request
        self.connection = connection
        self.transaction_manager = request.tm
        self._committing = committing
        self._committed = committed

    # -- the transaction manager's synchronizer --------------------------------------------------

    def newTransaction(self, transaction: Any) -> None:  # the transaction package's names
        transaction.join(self)

    def beforeCompletion(self, _transaction: Any) -> None:
        """Nothing to do before a transaction completes: its data manager side ends it."""

    def afterCompletion(self, _transaction: Any) -> None:
        """Nothing to do after it either: the connection stays for the next one (closed with the request)."""

    # -- the transaction's data manager ----------------------------------------------------------

    def abort(self, _transaction: Any) -> None:
        if self.connection.in_transaction():
            self.connection.rollback()  # a failure propagates, as a session's close would (db._final_answer)

    def tpc_begin(self, _transaction: Any) -> None:
        """Nothing to prepare: one connection, one phase (the COMMIT is in ``tpc_vote``)."""

    def commit(self, _transaction: Any) -> None:
        """Nothing before the vote: what the request wrote is already on the connection."""

    def tpc_vote(self, _transaction: Any) -> None:
        if self.connection.in_transaction():
            self._committing(self.request)
            self.connection.commit()
            self._committed(self.request)

    def tpc_finish(self, _transaction: Any) -> None:
        """Nothing after the vote: the COMMIT was sent there, so that its failure aborts the transaction."""

    def tpc_abort(self, _transaction: Any) -> None:
        # after a COMMIT that failed (its error is the one raised): best effort, a lost connection
        # is discarded when the request is finished (``transactions.write_connection``)
        if self.connection.in_transaction():
            with contextlib.suppress(Exception):
                self.connection.rollback()

    def sortKey(self) -> str:  # the transaction package's name
        return f"~~jsonapi.connection:{id(self)}"  # after zope.sqlalchemy's ("~sqlalchemy:...")

    def savepoint(self) -> Any:
        """A SAVEPOINT of the connection (``request.tm.savepoint()``), unless a session holds the
        transaction: zope.sqlalchemy's data manager makes the session's."""
        session = self.request.__dict__.get("dbsession")
        held = session is not None and session.in_transaction() and session.get_transaction().connections
        return _Savepoint(None if held or not self.connection.in_transaction() else self.connection.begin_nested())


class _Savepoint:
    def __init__(self, nested: Any) -> None:
        self.nested = nested

    def rollback(self) -> None:
        if self.nested is not None and self.nested.is_active:
            self.nested.rollback()
