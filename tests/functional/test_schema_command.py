"""``jsonapi-pyramid-schema`` end to end (CONTRACT section 12): it prints the schema of the
application an ini file describes (the blog; two versions of an application of models defined
here), and ``check`` tells the compatible version from the breaking one."""
from __future__ import annotations

import pytest
from pyramid.config import Configurator
from sqlalchemy import Boolean, ForeignKey, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from jsonapi_pyramid import RelationshipsCollection, ToOneRelationship, Transformer, schemacli
from jsonapi_pyramid.clientschema import schema_json, schema_of


@pytest.fixture
def blog_ini(tmp_path):
    path = tmp_path / "blog.ini"
    path.write_text(f"[app:main]\nuse = call:jsonapi_blog:main\nsqlalchemy.url = sqlite:///{tmp_path}/blog.sqlite\n")
    return path


def test_the_command_prints_the_schema_of_an_ini_files_application(blog_ini, wsgi_app, capsys):
    assert schemacli.main([str(blog_ini)]) == 0
    printed = capsys.readouterr().out.encode()
    assert printed == schema_json(schema_of(wsgi_app.registry))


def test_the_command_without_an_ini_file_says_how_to_call_it(capsys):
    with pytest.raises(SystemExit) as exit_:
        schemacli.main([])
    assert exit_.value.code == 2 and "config_uri" in capsys.readouterr().err


def _models(version: int):
    """Folders and notes; version 2 changes them: ``title`` may be NULL, ``body`` is no longer
    shown, a note's folder may be unset, ``pinned`` is new, ``archive`` is gone."""

    class Base(DeclarativeBase):
        pass

    class Folder(Base):
        __tablename__ = "folders"
        __jsonapi_type__ = "folders"
        id: Mapped[int] = mapped_column(primary_key=True)
        name: Mapped[str] = mapped_column(String(50))

        @classmethod
        def transformer(cls):
            return type("FolderTransformer", (Transformer,), {"attributes": ("name",)})()

        @classmethod
        def relationships(cls):
            return RelationshipsCollection()

    class Note(Base):
        __tablename__ = "notes"
        __jsonapi_type__ = "notes"
        id: Mapped[int] = mapped_column(primary_key=True)
        title: Mapped[str] = mapped_column(String(100), nullable=version == 2)
        body: Mapped[str] = mapped_column(Text)
        pinned: Mapped[bool] = mapped_column(Boolean, default=False)
        folder_id: Mapped[int] = mapped_column(ForeignKey("folders.id"), nullable=version == 2)
        folder: Mapped[Folder] = relationship()

        @classmethod
        def transformer(cls):
            shown = ("title", "body") if version == 1 else ("title", "pinned")
            return type("NoteTransformer", (Transformer,), {"attributes": shown})()

        @classmethod
        def relationships(cls):
            return RelationshipsCollection(ToOneRelationship("folder", Folder))

    return Folder, Note


def notes_app(global_config, **settings):
    """A paste app factory: the notes application of ``notes.version``."""
    version = int(settings["notes.version"])
    Folder, Note = _models(version)
    with Configurator(settings=settings) as config:
        config.include("jsonapi_pyramid.db")
        config.include("jsonapi_pyramid")
        config.add_jsonapi_resource(Folder, writable=("name",))
        config.add_jsonapi_resource(Note, writable=("title", "body") if version == 1 else ("title", "body", "pinned"))

        def archive(context, request):  # pragma: no cover - described, never called here
            raise NotImplementedError

        if version == 1:
            config.add_jsonapi_operation(Note, "archive", archive, on="item", request_method="POST")
    return config.make_wsgi_app()


def _schema_file(tmp_path, capsys, version):
    ini = tmp_path / f"notes{version}.ini"
    ini.write_text(f"[app:main]\nuse = call:{__name__}:notes_app\nnotes.version = {version}\n"
                   f"sqlalchemy.url = sqlite:///{tmp_path}/notes.sqlite\n")
    assert schemacli.main([str(ini)]) == 0
    path = tmp_path / f"schema{version}.json"
    path.write_text(capsys.readouterr().out)
    return str(path)


def test_check_tells_a_breaking_version_of_an_application_from_a_compatible_one(tmp_path, capsys):
    first, second = _schema_file(tmp_path, capsys, 1), _schema_file(tmp_path, capsys, 2)
    assert schemacli.main(["check", first, first]) == 0
    assert capsys.readouterr().out == ""
    assert schemacli.main(["check", first, second]) == 1
    assert capsys.readouterr().out.splitlines() == [
        "added notes.pinned: attribute",
        "BREAKING notes.body: no longer shown (write-only)",
        "BREAKING notes.body: sort field removed",
        "BREAKING notes.body: no longer filterable (was contains, eq, gt, gte, icontains, in, isnull, lt, lte, ne, nin, startswith)",
        "BREAKING notes.body: no statistics left (was count, maximum, minimum)",
        "BREAKING notes.title: made nullable (readers may meet null)",
        "BREAKING notes.folder: to-one made nullable (readers may meet null)",
        "BREAKING notes.archive: operation POST on the item removed",
    ]
    assert schemacli.main(["check", second, first]) == 1  # and back: what version 2 added is removed
    assert "BREAKING notes.pinned: attribute removed" in capsys.readouterr().out.splitlines()


def test_the_client_command_refuses_a_language_it_does_not_write(blog_ini, tmp_path, capsys):
    from jsonapi_pyramid import clientcli

    with pytest.raises(SystemExit) as exit_:
        clientcli.main([str(blog_ini), "--lang", "cobol", "--out", str(tmp_path / "out")])
    assert exit_.value.code == 2 and "invalid choice: 'cobol'" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
