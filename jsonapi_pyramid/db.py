"""The database session of a request, the way Pyramid applications wire it.

``config.include("jsonapi_pyramid.db")`` builds an engine from the ``sqlalchemy.*`` settings,
turns on pyramid_tm (one transaction per request: committed when the view succeeds, aborted when
anything raises, also when an exception view renders the error) and adds ``request.dbsession``,
joined to ``request.tm`` by zope.sqlalchemy. Views never commit.
An application that manages its own sessions just provides ``request.dbsession`` itself.
"""
from __future__ import annotations

import zope.sqlalchemy
from sqlalchemy import engine_from_config, event
from sqlalchemy.orm import sessionmaker

__all__ = ["get_engine", "get_session_factory", "get_tm_session"]


def get_engine(settings, prefix: str = "sqlalchemy."):
    engine = engine_from_config(settings, prefix)
    if engine.dialect.name == "sqlite":
        # SQLite enforces foreign keys (and their ON DELETE rules) only when asked, per connection.
        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_connection, _record):
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.close()

    return engine


def get_session_factory(engine):
    return sessionmaker(bind=engine)


def get_tm_session(session_factory, transaction_manager, request=None):
    session = session_factory(info={"request": request})
    zope.sqlalchemy.register(session, transaction_manager=transaction_manager)
    return session


def includeme(config):
    settings = config.get_settings()
    settings["tm.manager_hook"] = "pyramid_tm.explicit_manager"
    config.include("pyramid_tm")
    config.include("pyramid_retry")
    engine = get_engine(settings)
    session_factory = get_session_factory(engine)
    config.registry["db.engine"] = engine
    config.registry["dbsession_factory"] = session_factory

    def dbsession(request):
        # Tests and tools may hand in their own session through the environ.
        session = request.environ.get("app.dbsession")
        if session is None:
            session = get_tm_session(session_factory, request.tm, request=request)
        return session

    config.add_request_method(dbsession, reify=True)
