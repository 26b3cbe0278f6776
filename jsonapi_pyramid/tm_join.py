"""zope.sqlalchemy's session events, registered once on the session factory instead of per session.

``zope.sqlalchemy.register(session, transaction_manager=request.tm)`` adds seven event listeners
to each session it is given; with pyramid_tm's ``explicit_manager`` (a transaction manager per
request) that meant seven listeners added to a new session on every write request, the larger
part of the cost being SQLAlchemy's event registry, not the transaction. Here the same listeners
are registered once, on the factory (every session it makes), and each finds the transaction
manager of its session in ``session.info["transaction_manager"]``: a session made without one (a
read's, a tool's) is left alone, exactly as a session nobody registered. What each listener does
is what zope.sqlalchemy's ``ZopeTransactionEvents`` does (its defaults: ``initial_state``
active, ``keep_session`` false), through the package's public ``join_transaction`` and
``mark_changed``:

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
from transaction._transaction import Status  # what zope.sqlalchemy's before_commit compares with
from zope.sqlalchemy.datamanager import join_transaction, mark_changed

__all__ = ["FLUSHED", "FLUSH_LISTENERS", "TRANSACTION_MANAGER", "joined_session", "note_flush", "register_on_factory"]

#: The key of ``session.info`` that holds the transaction manager a session is joined to.
TRANSACTION_MANAGER = "transaction_manager"
#: The key of ``session.info`` set once the session flushed (``note_flush``).
FLUSHED = "jsonapi.flushed"


def register_on_factory(factory: Any) -> None:
    """Register the listeners on ``factory`` (a sessionmaker, or a Session class), once."""
    event.listen(factory, "after_begin", _after_begin)
    event.listen(factory, "after_attach", _after_attach)
    event.listen(factory, "after_flush", _after_flush)
    event.listen(factory, "after_bulk_update", _after_bulk)
    event.listen(factory, "after_bulk_delete", _after_bulk)
    event.listen(factory, "before_commit", _before_commit)
    event.listen(factory, "do_orm_execute", _do_orm_execute)


def joined_session(factory: Any, transaction_manager: Any, request: Any) -> Any:
    """A session of ``factory`` (one ``register_on_factory`` was applied to) joined to
    ``transaction_manager`` by the factory's listeners."""
    return factory(info={"request": request, TRANSACTION_MANAGER: transaction_manager})


def registered_on(factory: Any) -> bool:
    """Whether ``register_on_factory`` was applied to ``factory``."""
    return bool(event.contains(factory, "after_begin", _after_begin))


def _after_begin(session: Any, _transaction: Any, _connection: Any) -> None:
    manager = session.info.get(TRANSACTION_MANAGER)
    if manager is not None:
        join_transaction(session, transaction_manager=manager)


def _after_attach(session: Any, _instance: Any) -> None:
    manager = session.info.get(TRANSACTION_MANAGER)
    if manager is not None:
        join_transaction(session, transaction_manager=manager)


def _after_flush(session: Any, _flush_context: Any) -> None:
    manager = session.info.get(TRANSACTION_MANAGER)
    if manager is not None:
        mark_changed(session, transaction_manager=manager)


def _after_bulk(context: Any) -> None:
    manager = context.session.info.get(TRANSACTION_MANAGER)
    if manager is not None:
        mark_changed(context.session, transaction_manager=manager)


def _do_orm_execute(state: Any) -> None:
    if state.is_orm_statement and (state.is_insert or state.is_update or state.is_delete):
        manager = state.session.info.get(TRANSACTION_MANAGER)
        if manager is not None:
            mark_changed(state.session, transaction_manager=manager)


def note_flush(session: Any, _flush_context: Any) -> None:
    """``after_flush`` of every session of ``db.get_session_factory``: a read that flushed is
    warned about when its connection closes (``db.read_connection``)."""
    session.info[FLUSHED] = True


#: The library's own ``after_flush`` listeners: a write made without a flush
#: (``plain_writes``) calls them after its statement, as a flush would.
FLUSH_LISTENERS = (_after_flush, note_flush)


def _before_commit(session: Any) -> None:
    manager = session.info.get(TRANSACTION_MANAGER)
    if manager is not None:
        assert session.in_nested_transaction() or manager.get().status == Status.COMMITTING, \
            "Transaction must be committed using the transaction manager"
