"""A complete jsonapi_pyramid application: authors and their books, served on http://localhost:6543/api."""
import os
from wsgiref.simple_server import make_server

import colander
from pyramid.config import Configurator
from sqlalchemy import ForeignKey, String, select
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship

from jsonapi_pyramid import RelationshipsCollection, ToManyRelationship, ToOneRelationship, Transformer


class Base(DeclarativeBase):
    pass


class Author(Base):
    __tablename__ = "authors"
    __jsonapi_type__ = "authors"  # the resource type in URLs and documents
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(100))
    books: Mapped[list["Book"]] = relationship(back_populates="author")

    @classmethod
    def transformer(cls):
        return AuthorTransformer()

    @classmethod
    def relationships(cls):
        return RelationshipsCollection(ToManyRelationship.create("books", Book, mapped_by="author"))


class AuthorTransformer(Transformer):
    attributes = ("name",)


class Book(Base):
    __tablename__ = "books"
    __jsonapi_type__ = "books"
    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str] = mapped_column(String(200))
    author_id: Mapped[int] = mapped_column(ForeignKey("authors.id"))
    author: Mapped[Author] = relationship(back_populates="books")

    @classmethod
    def transformer(cls):
        return BookTransformer()

    @classmethod
    def relationships(cls):
        return RelationshipsCollection(ToOneRelationship.create("author", Author))


class BookTransformer(Transformer):
    attributes = ("title",)


class BookSchema(colander.MappingSchema):
    """What a client may send to create or update a book (validated, 422 with a pointer if not)."""

    title = colander.SchemaNode(colander.String(), validator=colander.Length(min=1, max=200))


def main(settings):
    """The WSGI application (what an ini file's ``[app:main]`` would name)."""
    with Configurator(settings=settings) as config:
        config.include("jsonapi_pyramid.db")  # engine from sqlalchemy.url, request.dbsession, transactions
        config.include("jsonapi_pyramid")  # the /api tree, views, JSON:API errors, content negotiation
        config.add_jsonapi_resource(Author)
        config.add_jsonapi_resource(Book, create=BookSchema)
    return config.make_wsgi_app()


if __name__ == "__main__":
    app = main({"sqlalchemy.url": "sqlite:///bookshelf.sqlite"})
    engine = app.registry["db.engine"]
    Base.metadata.create_all(engine)  # a real project uses alembic migrations instead
    with Session(engine) as session, session.begin():
        if session.scalar(select(Author)) is None:
            session.add(Author(name="Ursula K. Le Guin", books=[Book(title="The Dispossessed")]))
    server = make_server("127.0.0.1", int(os.environ.get("PORT", "6543")), app)
    print(f"Serving http://localhost:{server.server_port}/api/books", flush=True)
    server.serve_forever()
