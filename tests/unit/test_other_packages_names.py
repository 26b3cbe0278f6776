"""Names of other packages are left as those packages have them: WebOb's ``request.json_body``
(the library's body is ``request.jsonapi_body``), and pyramid_tm's ``tm.manager_hook`` setting
(the library gives a default only; pyramid_tm resolves it in its own configuration action)."""
from __future__ import annotations

import ast
import pathlib
import re

import colander
import pyramid_tm
import transaction
import webob.request
import webtest
from pyramid.config import Configurator
from pyramid.interfaces import IRequestExtensions
from pyramid.request import Request, apply_request_extensions
from sqlalchemy import String, create_engine, select
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from jsonapi_pyramid import RelationshipsCollection, Transformer

ROOT = pathlib.Path(__file__).resolve().parents[2]
#: Every source the repository's packages and templates hold.
SOURCES = ("jsonapi_pyramid", "jsonapi_blog", "examples", "docs")
MEDIA_TYPE = "application/vnd.api+json"


class Base(DeclarativeBase):
    pass


class Note(Base):
    __tablename__ = "notes"
    __jsonapi_type__ = "notes"
    id: Mapped[int] = mapped_column(primary_key=True)
    text: Mapped[str] = mapped_column(String(100))

    @classmethod
    def transformer(cls):
        return NoteTransformer()

    @classmethod
    def relationships(cls):
        return RelationshipsCollection()


class NoteTransformer(Transformer):
    attributes = ("text",)


class NoteSchema(colander.MappingSchema):
    text = colander.SchemaNode(colander.String())


def own_manager(request) -> transaction.TransactionManager:
    """An application's own ``tm.manager_hook``: notes each manager it makes in the test's list."""
    manager = transaction.TransactionManager(explicit=True)
    request.environ["test.managers"].append(manager)
    return manager


def make_app(tmp_path, **settings):
    url = f"sqlite:///{tmp_path / 'notes.sqlite'}"
    engine = create_engine(url)
    Base.metadata.create_all(engine)
    engine.dispose()
    with Configurator(settings={"sqlalchemy.url": url, **settings}) as config:
        config.include("jsonapi_pyramid.db")
        config.include("jsonapi_pyramid")
        config.add_jsonapi_resource(Note, create=NoteSchema)
    return config.make_wsgi_app()


def blank_request(app, body: bytes = b"", **environ) -> Request:
    request = Request.blank("/api/notes", environ, method="POST", body=body)
    request.registry = app.registry
    apply_request_extensions(request)
    return request


def test_webob_json_body_is_left_as_webob_has_it(tmp_path):
    app = make_app(tmp_path)
    extensions = app.registry.queryUtility(IRequestExtensions)
    assert "json_body" not in {*extensions.methods, *extensions.descriptors}
    request = blank_request(app, b'{"data": {"type": "notes", "attributes": {"text": "x"}}}')
    assert "json_body" not in vars(type(request))  # WebOb's property, inherited as WebOb has it
    assert isinstance(vars(webob.request.BaseRequest)["json_body"], property)
    assert request.json_body == request.jsonapi_body.document == {"data": {"type": "notes", "attributes": {"text": "x"}}}
    app.registry["db.engine"].dispose()


def test_the_library_defaults_tm_manager_hook_to_the_explicit_manager(tmp_path):
    app = make_app(tmp_path)
    assert app.registry.settings["tm.manager_hook"] is pyramid_tm.explicit_manager  # resolved by pyramid_tm's action
    assert blank_request(app).tm.explicit
    app.registry["db.engine"].dispose()


def test_an_applications_own_tm_manager_hook_is_respected(tmp_path):
    app = make_app(tmp_path, **{"tm.manager_hook": f"{__name__}.own_manager", "retry.attempts": "1"})
    assert app.registry.settings["tm.manager_hook"] is own_manager  # the dotted name, resolved by pyramid_tm
    made: list[transaction.TransactionManager] = []
    assert blank_request(app, **{"test.managers": made}).tm is made[0]
    made.clear()
    client = webtest.TestApp(app, extra_environ={"test.managers": made})
    body = b'{"data": {"type": "notes", "attributes": {"text": "kept"}}}'
    created = client.post("/api/notes", body, headers={"Content-Type": MEDIA_TYPE, "Accept": MEDIA_TYPE}, status=201)
    assert len(made) == 1  # the write ran in a transaction of the application's manager, committed
    assert client.get("/api/notes", headers={"Accept": MEDIA_TYPE}).json["data"][0]["id"] == created.json["data"]["id"]
    assert len(made) == 1  # a read runs without the transaction manager (tm.activate_hook)
    with Session(app.registry["db.engine"]) as session:
        assert session.scalars(select(Note.text)).all() == ["kept"]
    app.registry["db.engine"].dispose()


def _python_sources() -> list[pathlib.Path]:
    found = [path for folder in SOURCES for path in (ROOT / folder).rglob("*.py") if "_build" not in path.parts]
    return sorted(found + list((ROOT / "jsonapi_pyramid" / "scaffold").rglob("*.py_tmpl")))


def assignments_of_other_packages_names(source: str) -> list[str]:
    """``request.json_body`` given by ``add_request_method`` or assigned, and ``tm.manager_hook``
    assigned (not ``setdefault``) in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_request_method":
            names = [*node.args[1:2], *(keyword.value for keyword in node.keywords if keyword.arg == "name")]
            if any(isinstance(name, ast.Constant) and name.value == "json_body" for name in names):
                found.append(f"line {node.lineno}: add_request_method(..., 'json_body')")
            if len(node.args) == 1 and not names and getattr(node.args[0], "id", None) == "json_body":
                found.append(f"line {node.lineno}: add_request_method(json_body)")
        targets = node.targets if isinstance(node, ast.Assign) else []
        for target in targets:
            if isinstance(target, ast.Attribute) and target.attr == "json_body":
                found.append(f"line {node.lineno}: .json_body = ...")
            if isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant) \
                    and target.slice.value == "tm.manager_hook":
                found.append(f"line {node.lineno}: [\"tm.manager_hook\"] = ...")
    return found


def test_no_module_assigns_request_json_body_or_tm_manager_hook():
    found = {}
    for path in _python_sources():
        source = re.sub(r"\{\{[a-z_]+\}\}", "placeholder", path.read_text())  # a template's placeholders
        if assignments := assignments_of_other_packages_names(source):
            found[str(path.relative_to(ROOT))] = assignments
    assert found == {}


def test_the_scan_finds_each_way_of_assigning_them():
    source = (
        "config.add_request_method(json_body, 'json_body', reify=True)\n"
        "config.add_request_method(body, name='json_body')\n"
        "config.add_request_method(json_body)\n"
        "request.json_body = {}\n"
        "settings['tm.manager_hook'] = 'pyramid_tm.explicit_manager'\n"
        "settings.setdefault('tm.manager_hook', 'pyramid_tm.explicit_manager')\n"
        "config.add_request_method(request_body, 'jsonapi_body', reify=True)\n"
    )
    assert sorted(found.split(":")[0] for found in assignments_of_other_packages_names(source)) == \
        ["line 1", "line 2", "line 3", "line 4", "line 5"]
