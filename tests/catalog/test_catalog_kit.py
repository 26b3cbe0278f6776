"""The conformance kit fails where it should: an N+1 read is caught by its ``pages`` case."""
from __future__ import annotations

import pytest
import webtest
from pyramid.config import Configurator
from sqlalchemy import ForeignKey, String, create_engine
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from jsonapi_pyramid import RelationshipsCollection, Transformer
from jsonapi_pyramid.testing import Client, Kit, cases_of, checks


class Base(DeclarativeBase):
    pass


class Shelf(Base):
    __tablename__ = "shelves"
    __jsonapi_type__ = "shelves"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(50))
    items: Mapped[list[Item]] = relationship()

    @property
    def item_count(self) -> int:
        return len(self.items)  # a lazy load per shelf: one statement more per resource on the page

    @classmethod
    def transformer(cls):
        return ShelfTransformer()

    @classmethod
    def relationships(cls):
        return RelationshipsCollection()


class Item(Base):
    __tablename__ = "items"
    id: Mapped[int] = mapped_column(primary_key=True)
    shelf_id: Mapped[int] = mapped_column(ForeignKey("shelves.id"))


class ShelfTransformer(Transformer):
    attributes = ("name", "itemCount")


@pytest.fixture
def kit(tmp_path):
    url = f"sqlite:///{tmp_path / 'shelves.sqlite'}"
    Base.metadata.create_all(create_engine(url))
    with Configurator(settings={"sqlalchemy.url": url, "retry.attempts": "1"}) as config:
        config.include("jsonapi_pyramid.db")
        config.include("jsonapi_pyramid")
        config.add_jsonapi_resource(Shelf, writable=("name",))
    app = config.make_wsgi_app()
    yield Kit(Client(webtest.TestApp(app)), {"shelves": lambda kit, n: {"attributes": {"name": f"Shelf {n}"}}})
    app.registry["db.engine"].dispose()


def test_the_pages_case_catches_statements_growing_with_the_page(kit):
    definition = kit.registry.get("shelves")
    checks.crud(kit, definition)  # the resource itself is fine
    with pytest.raises(AssertionError, match="shelves: 2 statements for a page of 1, 4 for 3"):
        checks.pages(kit, definition)


def test_cases_are_named_by_type_and_check(kit):
    assert cases_of(kit.registry) == ["shelves:crud", "shelves:errors", "shelves:filter", "shelves:sort",
                                      "shelves:pages", "shelves:stats"]
