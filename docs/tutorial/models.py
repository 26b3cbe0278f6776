"""The models: each is a JSON:API resource (``__jsonapi_type__``, ``transformer()``, ``relationships()``).

After the tutorial: notebooks hold notes (a relationship each way), and a note has an owner (who
created it) and can be pinned.
"""
from __future__ import annotations

import datetime as dt

from sqlalchemy import Boolean, DateTime, ForeignKey, MetaData, String, Text, false
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from jsonapi_pyramid import RelationshipsCollection, ToManyRelationship, ToOneRelationship, Transformer, count_of

# Stable constraint names, so migrations can refer to them.
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def utcnow() -> dt.datetime:
    """Naive UTC, how timestamps are stored (documents show them with ``Z``)."""
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class Notebook(Base):
    """A notebook: a name and the notes in it."""

    __tablename__ = "notebooks"
    __jsonapi_type__ = "notebooks"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(100))
    notes: Mapped[list[Note]] = relationship(back_populates="notebook")

    @classmethod
    def transformer(cls) -> NotebookTransformer:
        return NotebookTransformer()

    @classmethod
    def relationships(cls) -> RelationshipsCollection:
        # "notes" in URLs and documents; mapped_by: the relationship's other side (Note.notebook)
        return RelationshipsCollection(ToManyRelationship.create("notes", Note, mapped_by="notebook"))


class NotebookTransformer(Transformer):
    attributes = ("name",)
    available_metas = ("notesCount",)  # ?meta[notebooks]=notesCount
    meta_notes_count = count_of("notes")


class Note(Base):
    """A short note: a title and a body, in a notebook or none."""

    __tablename__ = "notes"
    __jsonapi_type__ = "notes"
    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str] = mapped_column(String(200))
    body: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    # NOT NULL columns added to a table that has rows need a server default (see the migration).
    owner: Mapped[str] = mapped_column(String(100), server_default="")
    pinned: Mapped[bool] = mapped_column(Boolean, server_default=false())
    notebook_id: Mapped[int | None] = mapped_column(ForeignKey("notebooks.id"))
    notebook: Mapped[Notebook | None] = relationship(back_populates="notes")

    @classmethod
    def transformer(cls) -> NoteTransformer:
        return NoteTransformer()

    @classmethod
    def relationships(cls) -> RelationshipsCollection:
        return RelationshipsCollection(ToOneRelationship.create("notebook", Notebook, mapped_by="notes"))


class NoteTransformer(Transformer):
    attributes = ("title", "body", "createdAt", "owner", "pinned")  # createdAt reads Note.created_at
