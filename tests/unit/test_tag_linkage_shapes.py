"""The linkage part of an item's tag (``load.tag_linkage``) reads a plain foreign key's linked keys
from the one table holding the link (issue 37: the read-back of a create, S3's item); a join with
more conditions than its foreign key, inheritance or a composite key keeps the join through the
owner's row. The keys are the same either way: tests/functional/test_conditional_linkage.py."""
from __future__ import annotations

from sqlalchemy import Boolean, ForeignKey, Integer
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from jsonapi_blog import main
from jsonapi_pyramid.contract import get_registry
from jsonapi_pyramid.load.tag_linkage import _from_the_link
from tests.conftest import APP_SETTINGS


def _sql(statement) -> str:
    return " ".join(str(statement).split())


def test_the_blogs_relationships_read_the_table_that_holds_the_link(tmp_path):
    app = main({}, **{**APP_SETTINGS, "sqlalchemy.url": f"sqlite:///{tmp_path / 'shapes.sqlite'}"})
    try:
        articles = get_registry(app.registry).get("articles")
        by_name = {relationship.name: relationship for relationship in articles.relationships}
        assert _sql(_from_the_link(articles, by_name["comments"])) == \
            "SELECT comments.id FROM comments WHERE comments.article_id = :jsonapi_id"
        assert _sql(_from_the_link(articles, by_name["tags"])) == \
            "SELECT article_tags.tag_id FROM article_tags WHERE article_tags.article_id = :jsonapi_id"
        assert _sql(_from_the_link(articles, by_name["author"])) == \
            "SELECT articles.user_id FROM articles WHERE articles.id = :jsonapi_id"
    finally:
        app.registry["db.engine"].dispose()


class Base(DeclarativeBase):
    pass


class Owner(Base):
    __tablename__ = "owners"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    shown: Mapped[list[Item]] = relationship(primaryjoin="and_(Owner.id == Item.owner_id, Item.shown)", viewonly=True)
    items: Mapped[list[Item]] = relationship(viewonly=True)


class Item(Base):
    __tablename__ = "items"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    owner_id: Mapped[int] = mapped_column(ForeignKey("owners.id"))
    shown: Mapped[bool] = mapped_column(Boolean)


class _Key:
    def __init__(self, column):
        self.columns, self.composite = (column,), False


class _Definition:
    def __init__(self, model, column):
        self.model, self.id_key = model, _Key(column)


class _Relationship:
    def __init__(self, prop, target):
        self.prop, self.target_definition = prop, target


def test_a_join_with_more_than_its_foreign_key_keeps_the_join():
    owner, item = _Definition(Owner, Owner.__table__.c.id), _Definition(Item, Item.__table__.c.id)
    assert _from_the_link(owner, _Relationship(Owner.shown.property, item)) is None
    assert _sql(_from_the_link(owner, _Relationship(Owner.items.property, item))) == \
        "SELECT items.id FROM items WHERE items.owner_id = :jsonapi_id"
