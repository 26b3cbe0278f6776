"""The catalogue's tables: a small library, chosen for shapes the blog does not have.

| model | key | what it shows |
|---|---|---|
| ``Publisher`` | ``String(36)`` code, client-made (not a UUID: any text) | string keys, ``Time`` |
| ``Person`` | integer | two relationships to one target (``written``/``edited``), one-to-one (``card``) |
| ``LibraryCard`` | ``String(36)`` declared as UUID | one-to-one with ``uselist=False`` on both sides, a Python enum |
| ``Book`` | native ``Uuid`` | every attribute kind (a timestamp the database writes), many-to-many through ``secondary`` |
| ``Genre`` | string slug, client-made | self-reference both ways (``parent``/``children``) |
| ``Contribution`` | integer | an association object (book, person, role) as its own resource |
| ``Member``: ``Student``, ``Staff`` | integer | joined-table inheritance, each class its own type |
| ``Holding``: ``PrintCopy``, ``EbookLicence`` | integer | single-table inheritance; ``Book.holdings`` yields both types |
"""
from __future__ import annotations

import datetime as dt
import decimal
import enum
import uuid

from sqlalchemy import (
    JSON,
    Column,
    Date,
    DateTime,
    Enum,
    Float,
    ForeignKey,
    Integer,
    MetaData,
    Numeric,
    String,
    Table,
    Text,
    Time,
    UniqueConstraint,
    Uuid,
    func,
    select,
)
from sqlalchemy.ext.hybrid import hybrid_property
from sqlalchemy.orm import DeclarativeBase, Mapped, column_property, mapped_column, relationship

from jsonapi_pyramid import (
    RelationshipsCollection,
    ToManyRelationship,
    ToOneRelationship,
    Transformer,
    count_of,
)

NAMING = {"ix": "ix_%(column_0_label)s", "uq": "uq_%(table_name)s_%(column_0_name)s",
          "ck": "ck_%(table_name)s_%(constraint_name)s",
          "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s", "pk": "pk_%(table_name)s"}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


book_genres = Table(
    "book_genres", Base.metadata,
    Column("book_id", ForeignKey("books.id", ondelete="CASCADE"), primary_key=True),
    Column("genre_id", ForeignKey("genres.id", ondelete="CASCADE"), primary_key=True),
)


class Publisher(Base):
    """A publishing house, known by a short code the client chooses."""

    __tablename__ = "publishers"
    __jsonapi_type__ = "publishers"
    code: Mapped[str] = mapped_column(String(36), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    opens_at: Mapped[dt.time | None] = mapped_column(Time)
    books: Mapped[list[Book]] = relationship(back_populates="publisher")


    @classmethod
    def transformer(cls):
        return PublisherTransformer()

    @classmethod
    def relationships(cls):
        return RelationshipsCollection(ToManyRelationship.create("books", Book, mapped_by="publisher"))

class Person(Base):
    """An author or editor."""

    __tablename__ = "people"
    __jsonapi_type__ = "people"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    written: Mapped[list[Book]] = relationship(back_populates="author", foreign_keys="Book.author_id")
    # A custom primaryjoin: the second relationship to books, by the editor column.
    edited: Mapped[list[Book]] = relationship(primaryjoin="Book.editor_id == Person.id", back_populates="editor")
    card: Mapped[LibraryCard | None] = relationship(back_populates="holder", uselist=False)
    contributions: Mapped[list[Contribution]] = relationship(back_populates="person")


    @classmethod
    def transformer(cls):
        return PersonTransformer()

    @classmethod
    def relationships(cls):
        return RelationshipsCollection(
            ToManyRelationship.create("written", Book, mapped_by="author"),
            ToManyRelationship.create("edited", Book, mapped_by="editor"),
            ToOneRelationship.create("card", LibraryCard, mapped_by="holder"),
            ToManyRelationship.create("contributions", Contribution, mapped_by="person"),
        )

class Tier(enum.Enum):
    """A card's tier: a Python enum class, shown by its values, ordered as declared."""

    STANDARD = "standard"
    GOLD = "gold"
    BASIC = "basic"


class LibraryCard(Base):
    """A person's library card (at most one each): the key is text that holds a UUID."""

    __tablename__ = "library_cards"
    __jsonapi_type__ = "cards"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=lambda: str(uuid.uuid4()))
    number: Mapped[str] = mapped_column(String(20))
    tier: Mapped[Tier] = mapped_column(Enum(Tier, name="card_tier"), default=Tier.STANDARD)
    holder_id: Mapped[int | None] = mapped_column(ForeignKey("people.id", ondelete="SET NULL"), unique=True)
    holder: Mapped[Person | None] = relationship(back_populates="card", uselist=False)


    @classmethod
    def transformer(cls):
        return CardTransformer()

    @classmethod
    def relationships(cls):
        return RelationshipsCollection(ToOneRelationship.create("holder", Person, mapped_by="card"))

class Book(Base):
    """A book: one attribute of every kind."""

    __tablename__ = "books"
    __jsonapi_type__ = "books"
    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    title: Mapped[str] = mapped_column(String(200))
    summary: Mapped[str | None] = mapped_column(Text)
    pages: Mapped[int | None] = mapped_column(Integer)
    price: Mapped[decimal.Decimal | None] = mapped_column(Numeric(10, 2))
    weight: Mapped[float | None] = mapped_column(Float)
    in_print: Mapped[bool] = mapped_column(default=True)
    format: Mapped[str] = mapped_column(Enum("hardcover", "paperback", "ebook", name="book_format"),
                                        default="paperback")
    published_on: Mapped[dt.date | None] = mapped_column(Date)
    added_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)  # naive, UTC
    updated_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    # written by the database, not by the library: SQLite's CURRENT_TIMESTAMP text, in whole seconds
    catalogued_at: Mapped[dt.datetime] = mapped_column(DateTime, server_default=func.now())
    details: Mapped[dict | None] = mapped_column(JSON)
    publisher_code: Mapped[str | None] = mapped_column(ForeignKey("publishers.code", ondelete="SET NULL"))
    author_id: Mapped[int | None] = mapped_column(ForeignKey("people.id", ondelete="SET NULL"))
    editor_id: Mapped[int | None] = mapped_column(ForeignKey("people.id", ondelete="SET NULL"))

    title_length = column_property(func.length(title, type_=Integer))
    publisher: Mapped[Publisher | None] = relationship(back_populates="books")
    author: Mapped[Person | None] = relationship(back_populates="written", foreign_keys=[author_id])
    editor: Mapped[Person | None] = relationship(primaryjoin="Book.editor_id == Person.id", back_populates="edited")
    genres: Mapped[list[Genre]] = relationship(secondary=book_genres, back_populates="books")
    contributions: Mapped[list[Contribution]] = relationship(back_populates="book", cascade="all, delete-orphan")
    holdings: Mapped[list[Holding]] = relationship(back_populates="book", cascade="all, delete-orphan")

    @hybrid_property
    def price_with_tax(self):
        """The price with 10 % tax: in Python on an instance, in SQL in a query."""
        return None if self.price is None else (self.price * decimal.Decimal("1.10")).quantize(decimal.Decimal("0.01"))

    @price_with_tax.inplace.expression
    @classmethod
    def _price_with_tax(cls):
        return func.round(cls.price * decimal.Decimal("1.10"), 2, type_=Numeric(10, 2))

    @property
    def slug(self) -> str:
        """A plain Python property: shown, never filtered or sorted."""
        return "-".join(self.title.lower().split())


    @classmethod
    def transformer(cls):
        return BookTransformer()

    @classmethod
    def relationships(cls):
        return RelationshipsCollection(
            ToOneRelationship.create("publisher", Publisher, mapped_by="books"),
            ToOneRelationship.create("author", Person, mapped_by="written"),
            ToOneRelationship.create("editor", Person, mapped_by="edited"),
            ToManyRelationship.create("genres", Genre, mapped_by="books"),
            ToManyRelationship.create("contributions", Contribution, mapped_by="book"),
            ToManyRelationship.create("holdings", Holding, mapped_by="book"),
        )

class Genre(Base):
    """A genre in a tree of genres (a slug chosen by the client)."""

    __tablename__ = "genres"
    __jsonapi_type__ = "genres"
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    name: Mapped[str] = mapped_column(String(100))
    parent_id: Mapped[str | None] = mapped_column(ForeignKey("genres.id", ondelete="SET NULL"))
    parent: Mapped[Genre | None] = relationship(back_populates="children", remote_side=[id])
    children: Mapped[list[Genre]] = relationship(back_populates="parent")
    books: Mapped[list[Book]] = relationship(secondary=book_genres, back_populates="genres")
    book_count = column_property(
        select(func.count(book_genres.c.book_id)).where(book_genres.c.genre_id == id).correlate_except(book_genres)
        .scalar_subquery()
    )


    @classmethod
    def transformer(cls):
        return GenreTransformer()

    @classmethod
    def relationships(cls):
        return RelationshipsCollection(
            ToOneRelationship.create("parent", Genre, mapped_by="children"),
            ToManyRelationship.create("children", Genre, mapped_by="parent"),
            ToManyRelationship.create("books", Book, mapped_by="genres"),
        )

class Contribution(Base):
    """Who did what on a book: an association object with its own data (the role)."""

    __tablename__ = "contributions"
    __jsonapi_type__ = "contributions"
    __table_args__ = (UniqueConstraint("book_id", "person_id", "role"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    book_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("books.id", ondelete="CASCADE"))
    person_id: Mapped[int] = mapped_column(ForeignKey("people.id", ondelete="CASCADE"))
    role: Mapped[str] = mapped_column(Enum("author", "illustrator", "translator", name="contribution_role"))
    book: Mapped[Book] = relationship(back_populates="contributions")
    person: Mapped[Person] = relationship(back_populates="contributions")

    @classmethod
    def transformer(cls):
        return ContributionTransformer()

    @classmethod
    def relationships(cls):
        return RelationshipsCollection(
            ToOneRelationship.create("book", Book, mapped_by="contributions"),
            ToOneRelationship.create("person", Person, mapped_by="contributions"),
        )


class Member(Base):
    """Someone who borrows: a student or a member of staff (joined-table inheritance; each
    subclass is its own type, and a page of members reads every subclass's columns at once)."""

    __tablename__ = "members"
    __jsonapi_type__ = "members"
    __mapper_args__ = {"polymorphic_on": "kind", "polymorphic_identity": "member", "with_polymorphic": "*"}
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    kind: Mapped[str] = mapped_column(String(20))
    loans: Mapped[list[Holding]] = relationship(back_populates="borrower")

    @classmethod
    def transformer(cls):
        return MemberTransformer()

    @classmethod
    def relationships(cls):
        return RelationshipsCollection(ToManyRelationship.create("loans", Holding, mapped_by="borrower"))


class Student(Member):
    __tablename__ = "students"
    __jsonapi_type__ = "students"
    __mapper_args__ = {"polymorphic_identity": "student"}
    id: Mapped[int] = mapped_column(ForeignKey("members.id", ondelete="CASCADE"), primary_key=True)
    school: Mapped[str | None] = mapped_column(String(200))

    @classmethod
    def transformer(cls):
        return StudentTransformer()


class Staff(Member):
    __tablename__ = "staff"
    __jsonapi_type__ = "staff"
    __mapper_args__ = {"polymorphic_identity": "staff"}
    id: Mapped[int] = mapped_column(ForeignKey("members.id", ondelete="CASCADE"), primary_key=True)
    department: Mapped[str | None] = mapped_column(String(200))

    @classmethod
    def transformer(cls):
        return StaffTransformer()


class Holding(Base):
    """A copy of a book the library holds: printed or an e-book licence (single-table inheritance)."""

    __tablename__ = "holdings"
    __jsonapi_type__ = "holdings"
    __mapper_args__ = {"polymorphic_on": "kind", "polymorphic_identity": "holding"}
    id: Mapped[int] = mapped_column(primary_key=True)
    kind: Mapped[str] = mapped_column(String(20))
    book_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("books.id", ondelete="CASCADE"))
    borrower_id: Mapped[int | None] = mapped_column(ForeignKey("members.id", ondelete="SET NULL"))
    shelf_mark: Mapped[str | None] = mapped_column(String(20))
    licence_key: Mapped[str | None] = mapped_column(String(40))
    book: Mapped[Book] = relationship(back_populates="holdings")
    borrower: Mapped[Member | None] = relationship(back_populates="loans")

    @classmethod
    def transformer(cls):
        return HoldingTransformer()

    @classmethod
    def relationships(cls):
        return RelationshipsCollection(
            ToOneRelationship.create("book", Book, mapped_by="holdings"),
            ToOneRelationship.create("borrower", Member, mapped_by="loans"),
        )


class PrintCopy(Holding):
    __jsonapi_type__ = "printCopies"
    __mapper_args__ = {"polymorphic_identity": "print"}

    @classmethod
    def transformer(cls):
        return PrintCopyTransformer()


class EbookLicence(Holding):
    __jsonapi_type__ = "ebookLicences"
    __mapper_args__ = {"polymorphic_identity": "ebook"}

    @classmethod
    def transformer(cls):
        return EbookLicenceTransformer()

# -- what clients see -------------------------------------------------------------------------

class PublisherTransformer(Transformer):
    attributes = ("name", "opensAt")


class PersonTransformer(Transformer):
    attributes = ("name",)
    available_metas = ("writtenCount",)
    meta_written_count = count_of("written")


class CardTransformer(Transformer):
    attributes = ("number", "tier")


class BookTransformer(Transformer):
    attributes = ("title", "summary", "pages", "price", "weight", "inPrint", "format", "publishedOn", "addedAt",
                  "updatedAt", "cataloguedAt", "details", "titleLength", "priceWithTax", "slug")


class GenreTransformer(Transformer):
    attributes = ("name", "bookCount")


class ContributionTransformer(Transformer):
    attributes = ("role",)


class MemberTransformer(Transformer):
    attributes = ("name",)


class StudentTransformer(Transformer):
    attributes = ("name", "school")


class StaffTransformer(Transformer):
    attributes = ("name", "department")


class HoldingTransformer(Transformer):
    attributes = ()


class PrintCopyTransformer(Transformer):
    attributes = ("shelfMark",)


class EbookLicenceTransformer(Transformer):
    attributes = ("licenceKey",)
