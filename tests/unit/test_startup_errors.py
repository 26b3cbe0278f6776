"""Start-up mistakes name the file and line of the user's call, and for a misspelt name the name
meant (issue #27: they ended in ``Line 0 of file None``, a misspelt option named an internal
class, and forgetting ``jsonapi_pyramid.db`` started fine and then answered 500 to everything)."""
from __future__ import annotations

import dataclasses
import inspect
import pathlib
import subprocess
import sys

import pytest
from pyramid.config import Configurator
from pyramid.exceptions import ConfigurationError
from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from jsonapi_pyramid import RelationshipsCollection, ToOneRelationship, Transformer, add_jsonapi_resource
from jsonapi_pyramid.contract import ResourceOptions
from jsonapi_pyramid.declaration import ResourceDeclaration

HERE = pathlib.Path(__file__).resolve()


class Base(DeclarativeBase):
    pass


class AuthorTransformer(Transformer):
    attributes = ("name",)


class Author(Base):
    __tablename__ = "authors"
    __jsonapi_type__ = "authors"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(100))
    transformer = classmethod(lambda cls: AuthorTransformer())


class BookTransformer(Transformer):
    attributes = ("title",)


class Book(Base):
    __tablename__ = "books"
    __jsonapi_type__ = "books"
    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str] = mapped_column(String(100))
    writer_id: Mapped[int] = mapped_column(ForeignKey("authors.id"))
    writer: Mapped[Author] = relationship()
    transformer = classmethod(lambda cls: BookTransformer())
    relationships = classmethod(lambda cls: RelationshipsCollection(
        ToOneRelationship.create("author", Author, property=cls.__dict__.get("_property", "writer"))))


def _config(db: bool = True) -> Configurator:
    config = Configurator(settings={"sqlalchemy.url": "sqlite://"})
    if db:
        config.include("jsonapi_pyramid.db")
    config.include("jsonapi_pyramid")
    return config


def _line() -> int:
    return inspect.currentframe().f_back.f_lineno + 1  # the line after the caller's


def _assert_points_here(error: Exception, line: int, *words: str) -> None:
    text = str(error)
    assert (f"Line {line} of file {HERE}" in text) or (f"{HERE}, line {line}" in text), text
    assert "Line 0 of file None" not in text
    for word in words:
        assert word in text, text


def test_a_misspelt_option_names_the_call_and_the_option_meant():
    config = _config()
    with pytest.raises(ConfigurationError) as caught:
        line = _line()
        config.add_jsonapi_resource(Author, sortble=("name",))
    _assert_points_here(caught.value, line, "'sortble'", "did you mean 'sortable'?")


def test_an_unknown_relationship_attribute_names_the_call_and_the_attribute_meant(monkeypatch):
    monkeypatch.setattr(Book, "_property", "wrtier", raising=False)
    config = _config()
    config.add_jsonapi_resource(Author)
    line = _line()
    config.add_jsonapi_resource(Book)
    with pytest.raises(ConfigurationError) as caught:
        config.commit()
    _assert_points_here(caught.value, line, "'wrtier'", "did you mean 'writer'?")


def test_a_transformer_attribute_that_is_no_column_names_the_call_and_the_column_meant(monkeypatch):
    monkeypatch.setattr(BookTransformer, "attributes", ("titel",))
    config = _config()
    config.add_jsonapi_resource(Author)
    line = _line()
    config.add_jsonapi_resource(Book)
    with pytest.raises(ConfigurationError) as caught:
        config.commit()
    _assert_points_here(caught.value, line, "titel", "did you mean 'title'?")


def test_a_bad_sortable_path_names_the_call_and_the_field_meant():
    config = _config()
    line = _line()
    config.add_jsonapi_resource(Author, sortable=("nmae",))
    config.add_jsonapi_resource(Book)
    with pytest.raises(ConfigurationError) as caught:
        config.commit()
    _assert_points_here(caught.value, line, "'nmae'", "did you mean 'name'?")


def test_an_acl_without_a_security_policy_names_the_call():
    config = _config()
    line = _line()
    config.add_jsonapi_resource(Author, acl=[("Allow", "system.Everyone", "view")])
    with pytest.raises(ConfigurationError) as caught:
        config.commit()
    _assert_points_here(caught.value, line, "no security policy")


def test_resources_without_a_database_session_are_refused_at_start_up():
    config = _config(db=False)
    line = _line()
    config.add_jsonapi_resource(Author)
    with pytest.raises(ConfigurationError) as caught:
        config.commit()
    _assert_points_here(caught.value, line, 'config.include("jsonapi_pyramid.db")')


def test_an_application_giving_its_own_dbsession_starts():
    config = _config(db=False)
    config.add_request_method(lambda request: None, "dbsession", reify=True)
    config.add_jsonapi_resource(Author)
    config.commit()


def test_a_direct_call_names_its_line_too():
    config = _config()
    with pytest.raises(ConfigurationError) as caught:
        line = _line()
        add_jsonapi_resource(config, Author, sortble=("name",))  # type: ignore[call-arg]
    _assert_points_here(caught.value, line, "did you mean 'sortable'?")


def test_the_typed_options_are_the_declarations_fields():
    fields = [field.name for field in dataclasses.fields(ResourceDeclaration) if field.name != "model"]
    keywords = [name for name, parameter in inspect.signature(ResourceDeclaration.of).parameters.items()
                if parameter.kind is inspect.Parameter.KEYWORD_ONLY]
    assert sorted(fields) == sorted(ResourceOptions.__annotations__)
    assert set(keywords) <= set(fields)


def test_mypy_sees_a_misspelt_option_in_a_direct_call(tmp_path):
    source = tmp_path / "app.py"
    source.write_text("from pyramid.config import Configurator\n"
                      "from jsonapi_pyramid import add_jsonapi_resource\n\n\n"
                      "def main(config: Configurator, model: type) -> None:\n"
                      "    add_jsonapi_resource(config, model, sortble=('name',))\n")
    result = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--ignore-missing-imports",
                             "--follow-imports=silent", str(source)], capture_output=True, text=True)
    assert result.returncode == 1 and "sortble" in result.stdout, result.stdout + result.stderr
