"""The models the documentation's chapters use, and the harness that runs their examples.

Every ``testcode`` block of the docs starts with ``from bookshelf import *``: the models below, the
names a chapter's example imports anyway, and ``serve(main)``, which builds the chapter's
application over a fresh in-memory SQLite database with a few rows and returns a WebTest app.
"""
from __future__ import annotations

import datetime as dt
import json

import colander
import webtest
from pyramid.config import Configurator
from sqlalchemy import Column, ForeignKey, String, Table
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship
from sqlalchemy.pool import StaticPool

from jsonapi_pyramid import (
    RelationshipsCollection,
    ToManyRelationship,
    ToOneRelationship,
    Transformer,
    count_of,
)
from jsonapi_pyramid.validation import DateString

__all__ = [  # the examples' models, what their code imports anyway, and the harness
    "Author",
    "AuthorTransformer",
    "Base",
    "Book",
    "BookSchema",
    "BookTransformer",
    "Configurator",
    "ForeignKey",
    "Mapped",
    "RelationshipsCollection",
    "String",
    "Tag",
    "TagTransformer",
    "ToManyRelationship",
    "ToOneRelationship",
    "Transformer",
    "colander",
    "count_of",
    "mapped_column",
    "relationship",
    "serve",
    "show",
]


class Base(DeclarativeBase):
    pass


book_tags = Table(
    "book_tags", Base.metadata,
    Column("book_id", ForeignKey("books.id", ondelete="CASCADE"), primary_key=True),
    Column("tag_id", ForeignKey("tags.id", ondelete="CASCADE"), primary_key=True),
)


class Author(Base):
    """A person who writes books."""

    __tablename__ = "authors"
    __jsonapi_type__ = "authors"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(100))
    books: Mapped[list[Book]] = relationship(back_populates="author")

    @classmethod
    def transformer(cls):
        return AuthorTransformer()

    @classmethod
    def relationships(cls):
        return RelationshipsCollection(ToManyRelationship.create("books", Book, mapped_by="author"))


class AuthorTransformer(Transformer):
    attributes = ("name",)
    available_metas = ("booksCount",)
    meta_books_count = count_of("books")  # one GROUP BY for every author of a document


class Book(Base):
    """A book: draft until published."""

    __tablename__ = "books"
    __jsonapi_type__ = "books"
    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str] = mapped_column(String(200))
    status: Mapped[str] = mapped_column(String(20), default="draft")
    published_on: Mapped[dt.date | None]
    author_id: Mapped[int] = mapped_column(ForeignKey("authors.id"))
    author: Mapped[Author] = relationship(back_populates="books")
    tags: Mapped[list[Tag]] = relationship(secondary=book_tags, back_populates="books")

    @classmethod
    def transformer(cls):
        return BookTransformer()

    @classmethod
    def relationships(cls):
        return RelationshipsCollection(
            ToOneRelationship.create("author", Author),
            ToManyRelationship.create("tags", Tag, mapped_by="books"),
        )


class BookTransformer(Transformer):
    attributes = ("title", "status", "publishedOn")  # publishedOn reads Book.published_on


class Tag(Base):
    __tablename__ = "tags"
    __jsonapi_type__ = "tags"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(50), unique=True)
    books: Mapped[list[Book]] = relationship(secondary=book_tags, back_populates="tags")

    @classmethod
    def transformer(cls):
        return TagTransformer()

    @classmethod
    def relationships(cls):
        return RelationshipsCollection(ToManyRelationship.create("books", Book, mapped_by="tags"))


class TagTransformer(Transformer):
    attributes = ("name",)


class BookSchema(colander.MappingSchema):
    title = colander.SchemaNode(colander.String(), validator=colander.Length(min=1, max=200))
    status = colander.SchemaNode(colander.String(), validator=colander.OneOf(["draft", "published"]),
                                 missing=colander.drop)
    publishedOn = colander.SchemaNode(DateString(), missing=colander.drop)


def _sample(session: Session) -> None:
    le_guin, tolkien = Author(name="Ursula K. Le Guin"), Author(name="J. R. R. Tolkien")
    classic, fantasy = Tag(name="classic"), Tag(name="fantasy")
    session.add_all([
        Book(title="A Wizard of Earthsea", status="published", published_on=dt.date(1968, 11, 1),
             author=le_guin, tags=[classic, fantasy]),
        Book(title="The Dispossessed", status="published", published_on=dt.date(1974, 5, 1), author=le_guin,
             tags=[classic]),
        Book(title="The Hobbit", status="published", published_on=dt.date(1937, 9, 21), author=tolkien,
             tags=[fantasy]),
        Book(title="Notes", status="draft", author=tolkien),
    ])


def serve(main, *, base: type[DeclarativeBase] = Base, **extra_environ) -> webtest.TestApp:
    """``main(settings)`` over a new in-memory database, as a WebTest app (``extra_environ``: WSGI
    environ of every request). With this module's models (``base``), the database holds two
    authors, four books (one a draft) and two tags; with other models, their empty tables."""
    app = main({"sqlalchemy.url": "sqlite://", "sqlalchemy.poolclass": StaticPool})
    engine = app.registry["db.engine"]
    base.metadata.create_all(engine)
    if base is Base:
        with Session(engine) as session, session.begin():
            _sample(session)
    return webtest.TestApp(app, extra_environ=extra_environ)


def show(value) -> None:
    """Print JSON the way the examples show it: indented, keys in document order."""
    print(json.dumps(value, indent=2))
