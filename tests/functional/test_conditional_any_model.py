"""Conditional requests and CORS on a model that is not the blog's: string ids, a type registered
with ``require_if_match=True`` (428), CORS for any origin (``*``), and a 500 a page can read."""
from __future__ import annotations

import colander
import orjson
import pytest
import webtest
from pyramid.config import Configurator
from sqlalchemy import String, create_engine
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from jsonapi_pyramid import RelationshipsCollection, Transformer
from jsonapi_pyramid.operations import item

MEDIA_TYPE = "application/vnd.api+json"


class Base(DeclarativeBase):
    pass


class Note(Base):
    __tablename__ = "notes"
    __jsonapi_type__ = "notes"
    code: Mapped[str] = mapped_column(String(20), primary_key=True)
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
    text = colander.SchemaNode(colander.String(), validator=colander.Length(max=100))


def boom(context, request):
    raise RuntimeError("a bug in application code")


def shout(context, request):
    """A conditional operation answering with the resource."""
    context.entity.text = context.entity.text.upper()
    return item(request, context.entity)


def archive(context, request):
    """A conditional operation answering with no content."""
    context.entity.text = f"[{context.entity.text}]"
    request.response.status_code = 204
    return None


def scrap(context, request):
    """A conditional operation that deletes the resource: no tag to give."""
    request.dbsession.delete(context.entity)
    request.response.status_code = 204
    return None


@pytest.fixture(scope="module")
def notes(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('notes')}/notes.sqlite"
    engine = create_engine(url)
    Base.metadata.create_all(engine)
    engine.dispose()
    with Configurator(settings={"sqlalchemy.url": url, "jsonapi.cors_origins": "*"}) as config:
        config.include("jsonapi_pyramid.db")
        config.include("jsonapi_pyramid")
        config.add_jsonapi_resource(Note, create=NoteSchema, client_ids=True, require_if_match=True)
        config.add_jsonapi_operation(Note, "boom", boom, on="item", request_method="POST")
        for name, view in (("shout", shout), ("archive", archive), ("scrap", scrap)):
            config.add_jsonapi_operation(Note, name, view, on="item", request_method="POST", conditional=True)
    app = config.make_wsgi_app()
    yield webtest.TestApp(app, extra_environ={"HTTP_HOST": "example.test"})
    app.registry["db.engine"].dispose()


def send(app, method, url, document, status, **headers):
    body = b"" if document is None else orjson.dumps(document)
    return app.request(url, method=method, body=body, status=status,
                       headers={"Host": "example.test", "Content-Type": MEDIA_TYPE, **headers})


def test_a_type_that_requires_if_match(notes):
    created = send(notes, "POST", "/api/notes", {"data": {"type": "notes", "id": "n-1", "attributes": {"text": "a"}}}, 201)
    assert created.headers["ETag"] == notes.get("/api/notes/n-1").headers["ETag"]
    patch = {"data": {"type": "notes", "id": "n-1", "attributes": {"text": "b"}}}
    for method, document in (("PATCH", patch), ("DELETE", None)):
        error = send(notes, method, "/api/notes/n-1", document, 428).json["errors"][0]
        assert error["status"] == "428" and error["source"] == {"header": "If-Match"}
        send(notes, method, "/api/notes/n-1", document, 412, **{"If-Match": '"stale"'})
    assert notes.get("/api/notes/n-1").json["data"]["attributes"]["text"] == "a"
    etag = send(notes, "PATCH", "/api/notes/n-1", patch, 200, **{"If-Match": created.headers["ETag"]}).headers["ETag"]
    assert notes.get("/api/notes/n-1").headers["ETag"] == etag != created.headers["ETag"]
    send(notes, "DELETE", "/api/notes/n-1", None, 412, **{"If-Match": created.headers["ETag"]})
    send(notes, "DELETE", "/api/notes/n-1", None, 204, **{"If-Match": etag})
    notes.get("/api/notes/n-1", status=404)
    paths = notes.get("/api/openapi.json").json["paths"]
    assert {"412", "428"} <= set(paths["/api/notes/{id}"]["patch"]["responses"])


def test_any_origin_and_a_500_the_page_can_read(notes):
    send(notes, "POST", "/api/notes", {"data": {"type": "notes", "id": "n-2", "attributes": {"text": "a"}}}, 201)
    origin = "https://anywhere.example"
    response = notes.get("/api/notes", headers={"Origin": origin})
    assert response.headers["Access-Control-Allow-Origin"] == origin
    preflight = notes.options("/api/notes/n-2/boom", headers={"Origin": origin, "Access-Control-Request-Method": "POST"},
                              status=204)
    assert preflight.headers["Access-Control-Allow-Methods"] == "POST"
    failed = send(notes, "POST", "/api/notes/n-2/boom", None, 500, Origin=origin)
    assert failed.json["errors"][0]["status"] == "500"
    assert failed.headers["Access-Control-Allow-Origin"] == origin
    assert "X-Request-Id" in failed.headers["Access-Control-Expose-Headers"]


def test_conditional_operations_on_a_type_that_requires_if_match(notes):
    """428 without If-Match, 412 with a stale tag (nothing changes), and the new tag on the answer:
    as ``ETag`` too when the answer is the resource, in ``X-Resource-ETag`` alone when it is not,
    none once the resource is gone."""
    created = send(notes, "POST", "/api/notes", {"data": {"type": "notes", "id": "n-3", "attributes": {"text": "a"}}}, 201)
    for name in ("shout", "archive", "scrap"):
        assert send(notes, "POST", f"/api/notes/n-3/{name}", None, 428).json["errors"][0]["source"] == {"header": "If-Match"}
        send(notes, "POST", f"/api/notes/n-3/{name}", None, 412, **{"If-Match": '"stale"'})
    assert notes.get("/api/notes/n-3").headers["ETag"] == created.headers["ETag"]
    shouted = send(notes, "POST", "/api/notes/n-3/shout", None, 200, **{"If-Match": created.headers["ETag"]})
    assert shouted.json["data"]["attributes"]["text"] == "A"
    assert shouted.headers["ETag"] == shouted.headers["X-Resource-ETag"] == notes.get("/api/notes/n-3").headers["ETag"]
    archived = send(notes, "POST", "/api/notes/n-3/archive", None, 204, **{"If-Match": shouted.headers["ETag"]})
    assert "ETag" not in archived.headers
    assert archived.headers["X-Resource-ETag"] == notes.get("/api/notes/n-3").headers["ETag"] != shouted.headers["ETag"]
    send(notes, "POST", "/api/notes/n-3/scrap", None, 412, **{"If-Match": shouted.headers["ETag"]})
    scrapped = send(notes, "POST", "/api/notes/n-3/scrap", None, 204, **{"If-Match": archived.headers["X-Resource-ETag"]})
    assert "X-Resource-ETag" not in scrapped.headers and "ETag" not in scrapped.headers
    notes.get("/api/notes/n-3", status=404)
    operation = notes.get("/api/openapi.json").json["paths"]["/api/notes/{id}/shout"]["post"]
    assert {"412", "428"} <= set(operation["responses"])
