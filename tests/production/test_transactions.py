"""The write session's transaction: zope.sqlalchemy's listeners registered once on the factory
(``tm_join.py``) rather than on every session; a session made without a transaction manager
(a read's, a tool's) is joined to nothing. In-process, on every backend where a database is used."""
from __future__ import annotations

import pytest
import transaction
import webtest
from pyramid.config import Configurator
from pyramid.response import Response
from pyramid.security import NO_PERMISSION_REQUIRED
from sqlalchemy import Column, Integer, create_engine, func, select
from sqlalchemy.orm import DeclarativeBase, sessionmaker

from jsonapi_pyramid import db
from jsonapi_pyramid.traversal import Root

ZOPE_EVENTS = ("after_begin", "after_attach", "after_flush", "after_bulk_update", "after_bulk_delete",
               "before_commit", "do_orm_execute")


class Base(DeclarativeBase):
    pass


class Row(Base):
    __tablename__ = "tm_join_rows"
    id = Column(Integer, primary_key=True)


@pytest.fixture
def engine(tmp_path):
    engine = create_engine(f"sqlite:///{tmp_path}/tm.sqlite")
    Base.metadata.create_all(engine)
    yield engine
    engine.dispose()


def rows(engine) -> int:
    with engine.connect() as connection:
        return int(connection.execute(select(func.count()).select_from(Row)).scalar_one())


def test_a_write_session_has_no_listeners_of_its_own_and_commits_with_the_request(tmp_path):
    """The seven listeners are the factory's: none is added to the session of each write."""
    seen = {}

    def view(request):
        session = request.dbsession
        seen.update({name: len(getattr(session.dispatch, name).listeners) for name in ZOPE_EVENTS})
        Base.metadata.create_all(session.connection())
        session.add(Row())
        return Response("done")

    config = Configurator(settings={"sqlalchemy.url": f"sqlite:///{tmp_path}/probe.sqlite"})
    config.include("jsonapi_pyramid.db")
    config.include("jsonapi_pyramid")
    config.add_view(view, context=Root, name="probe", permission=NO_PERMISSION_REQUIRED)
    app = webtest.TestApp(config.make_wsgi_app())
    try:
        assert app.post("/probe").status_int == 200
        assert seen == dict.fromkeys(ZOPE_EVENTS, 0)
        assert rows(app.app.registry["db.engine"]) == 1  # committed by pyramid_tm
    finally:
        app.app.registry["db.engine"].dispose()


def test_only_the_session_made_with_a_transaction_manager_is_joined(engine):
    factory = db.get_session_factory(engine, transactions=True)
    manager = transaction.TransactionManager(explicit=True)
    manager.begin()
    loose = factory()  # no transaction manager: a tool's session, with its own commit and rollback
    loose.add(Row(id=1))
    loose.flush()
    manager.abort()  # not the loose session's transaction: its row stays pending
    loose.commit()  # allowed: only a joined session refuses a commit the manager did not start
    assert rows(engine) == 1
    manager.begin()
    joined = db.get_tm_session(factory, manager)
    joined.add(Row(id=2))
    joined.flush()
    manager.commit()
    assert rows(engine) == 2


def test_a_joined_session_is_rolled_back_with_its_transaction_and_refuses_its_own_commit(engine):
    factory = db.get_session_factory(engine, transactions=True)
    manager = transaction.TransactionManager(explicit=True)
    manager.begin()
    session = db.get_tm_session(factory, manager)
    session.add(Row(id=1))
    with pytest.raises(AssertionError, match="transaction manager"):
        session.commit()
    manager.abort()
    assert rows(engine) == 0


def test_a_bulk_update_marks_the_session_changed_so_that_it_commits(engine):
    """An ORM UPDATE without a flush of objects: without the mark the transaction would roll the
    session back as read-only."""
    from sqlalchemy import update

    with sessionmaker(bind=engine)() as setup:
        setup.add(Row(id=1))
        setup.commit()
    factory = db.get_session_factory(engine, transactions=True)
    manager = transaction.TransactionManager(explicit=True)
    manager.begin()
    db.get_tm_session(factory, manager).execute(update(Row).where(Row.id == 1).values(id=5))
    manager.commit()
    with engine.connect() as connection:
        assert connection.execute(select(Row.id)).scalars().all() == [5]


def test_another_factory_still_gets_zope_sqlalchemys_listeners_on_the_session(engine):
    """``get_tm_session`` with a sessionmaker the library did not make: ``register`` per session."""
    manager = transaction.TransactionManager(explicit=True)
    manager.begin()
    session = db.get_tm_session(sessionmaker(bind=engine), manager)
    assert len(session.dispatch.after_begin.listeners) == 1
    session.add(Row(id=1))
    manager.commit()
    assert rows(engine) == 1
