"""zope.sqlalchemy's session events, registered once on the session factory instead of per session.

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

from typing import Any

from sqlalchemy import event
from zope.sqlalchemy import ZopeTransactionEvents

__all__ = ["FLUSHED", "FLUSH_LISTENERS", "LISTENERS", "TRANSACTION_EVENTS", "TRANSACTION_MANAGER", "joined_session", "note_flush",
           "register_on_factory"]

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


def joined_session(factory: Any, transaction_manager: Any, request: Any) -> Any:
    """A session of ``factory`` (one ``register_on_factory`` was applied to) joined to
    ``transaction_manager`` by the factory's listeners."""
    events = ZopeTransactionEvents(transaction_manager=transaction_manager)
    return factory(info={"request": request, TRANSACTION_MANAGER: transaction_manager, TRANSACTION_EVENTS: events})


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
