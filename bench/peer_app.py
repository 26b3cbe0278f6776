"""pyramid-jsonapi 2.2.13 (installed from the package index into bench/.peer-venv) configured over
classic ``declarative_base()`` models of the same tables. AGPL-3.0: this file only configures it.

Its conventions differ from ours: attributes are the column names (``created_at``), parameters are
``page[limit]``/``page[offset]`` and ``filter[<path>:<op>]``. The models map only the columns an
anonymous caller sees in the reference service (no ``email``, no ``password_hash``), and name each
relationship as the reference service does (``author``, ``comments``, ``tags``, ``article``).
Collections use its "selectin" workflow (bounded statements) unless ``BENCH_PEER_WORKFLOW=loop``.
"""
from __future__ import annotations

import datetime as dt
import os

from pyramid.config import Configurator
from pyramid.renderers import JSON
from sqlalchemy import Boolean, Column, DateTime, ForeignKey, Integer, String, Table, Text, create_engine, event
from sqlalchemy.ext.declarative import declarative_base
from sqlalchemy.orm import relationship, sessionmaker

Base = declarative_base()


def utcnow():
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


article_tags = Table(
    "article_tags", Base.metadata,
    Column("article_id", Integer, ForeignKey("articles.id"), primary_key=True),
    Column("tag_id", Integer, ForeignKey("tags.id"), primary_key=True),
)


class User(Base):
    __tablename__ = "users"
    id = Column(Integer, primary_key=True)
    name = Column(String(255))
    active = Column(Boolean)
    created_at = Column(DateTime)
    updated_at = Column(DateTime)


class Tag(Base):
    __tablename__ = "tags"
    id = Column(Integer, primary_key=True)
    name = Column(String(64))


class Article(Base):
    __tablename__ = "articles"
    id = Column(Integer, primary_key=True)
    title = Column(String(255))
    body = Column(Text)
    status = Column(String(16))
    user_id = Column(Integer, ForeignKey("users.id"))
    created_at = Column(DateTime, default=utcnow)
    updated_at = Column(DateTime, default=utcnow)
    author = relationship(User, backref="articles")
    tags = relationship(Tag, secondary=article_tags, backref="articles")


class Comment(Base):
    __tablename__ = "comments"
    id = Column(Integer, primary_key=True)
    body = Column(Text)
    article_id = Column(Integer, ForeignKey("articles.id"))
    user_id = Column(Integer, ForeignKey("users.id"))
    created_at = Column(DateTime)
    article = relationship(Article, backref="comments")
    author = relationship(User, backref="comments")


MODELS = (User, Tag, Article, Comment)


def make_app(url: str):
    """The WSGI app and its engine."""
    import pyramid_jsonapi

    engine = create_engine(url.replace("postgresql+psycopg:", "postgresql+psycopg2:"))
    if engine.dialect.name == "sqlite":
        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_connection, _record):
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.close()

    factory = sessionmaker(bind=engine)
    workflow = os.environ.get("BENCH_PEER_WORKFLOW", "selectin")
    # Its metadata endpoints stay on: its POST validation needs them.
    settings = {"pyramid_jsonapi.paging_max_limit": "100"}
    if workflow == "selectin":
        settings["pyramid_jsonapi.workflow_collection_get"] = "pyramid_jsonapi.workflow.selectin.collection_get"

    def dbsession(request):
        session = factory()

        def finish(req):
            try:
                if req.exception is None:
                    session.commit()
                else:
                    session.rollback()
            finally:
                session.close()

        request.add_finished_callback(finish)
        return session

    with Configurator(settings=settings) as config:
        config.add_request_method(dbsession, reify=True)
        renderer = JSON()  # its views render with Pyramid's "json" renderer: teach it timestamps
        renderer.add_adapter(dt.datetime, lambda value, _request: value.isoformat() + "Z")
        config.add_renderer("json", renderer)
        api = pyramid_jsonapi.PyramidJSONAPI(config, MODELS)
        api.create_jsonapi()
    return config.make_wsgi_app(), engine
