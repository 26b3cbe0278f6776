"""An application written from the documentation alone (issue 33's acceptance): a multi-tenant
helpdesk with UUID keys, Enum workflows (names unlike values), an ``Interval`` SLA, a composite key
and row-level tenancy, soft delete and a custom operation; the conformance kit over it, and what a
tenant must never see of another, on SQLite and PostgreSQL.

Only the public API the docs teach is used: ``add_jsonapi_resource`` with ``visible=``,
``apply=``, ``client_ids=``, ``writable=``; ``add_jsonapi_write_check``; ``add_jsonapi_operation``
with ``operations.validated`` and ``no_content``; ``add_request_method`` for the tenant.
"""
from __future__ import annotations

import datetime as dt
import enum
import uuid
from typing import Any

import colander
import orjson
import pytest
import webtest
from pyramid.config import Configurator
from sqlalchemy import DateTime, Enum, ForeignKeyConstraint, Interval, String, Uuid, create_engine
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from jsonapi_pyramid import Forbidden, RelationshipsCollection, ToManyRelationship, ToOneRelationship, Transformer
from jsonapi_pyramid.operations import no_content, request_data, validated
from jsonapi_pyramid.testing import conformance
from tests.conftest import BACKENDS, backend_database

MEDIA_TYPE = "application/vnd.api+json"
CURSOR = 'application/vnd.api+json; profile="http://jsonapi.org/profiles/ethanresnick/cursor-pagination/"'


class Base(DeclarativeBase):
    pass


class Priority(enum.Enum):
    LOW = "low"
    NORMAL = "normal"
    HIGH = "high"


class Queue(Base):
    """Keyed by (tenant, code): the id ``acme~support``."""

    __tablename__ = "hd_queues"
    __jsonapi_type__ = "queues"
    tenant: Mapped[str] = mapped_column(String(20), primary_key=True)
    code: Mapped[str] = mapped_column(String(20), primary_key=True)
    name: Mapped[str] = mapped_column(String(60))
    tickets: Mapped[list[Ticket]] = relationship(back_populates="queue", overlaps="tickets")

    @classmethod
    def transformer(cls):
        return QueueTransformer()

    @classmethod
    def relationships(cls):
        return RelationshipsCollection(ToManyRelationship.create("tickets", Ticket, mapped_by="queue"))


class QueueTransformer(Transformer):
    attributes = ("name",)


class Ticket(Base):
    __tablename__ = "hd_tickets"
    __jsonapi_type__ = "tickets"
    __table_args__ = (ForeignKeyConstraint(["tenant", "queue_code"], ["hd_queues.tenant", "hd_queues.code"]),)
    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    tenant: Mapped[str] = mapped_column(String(20))
    queue_code: Mapped[str | None] = mapped_column(String(20))
    title: Mapped[str] = mapped_column(String(100))
    priority: Mapped[Priority] = mapped_column(Enum(Priority, name="hd_priority", values_callable=lambda e: [m.value for m in e]),
                                               default=Priority.NORMAL)
    status: Mapped[str] = mapped_column(Enum("open", "pending", "closed", name="hd_status"), default="open")
    sla: Mapped[dt.timedelta | None] = mapped_column(Interval)
    deleted_at: Mapped[dt.datetime | None] = mapped_column(DateTime)
    queue: Mapped[Queue | None] = relationship(back_populates="tickets", overlaps="tickets")

    @classmethod
    def transformer(cls):
        return TicketTransformer()

    @classmethod
    def relationships(cls):
        return RelationshipsCollection(ToOneRelationship.create("queue", Queue))


class TicketTransformer(Transformer):
    attributes = ("title", "priority", "status", "sla")


def tenant_of(request):
    return request.headers.get("X-Tenant", "")


def apply_tenant(entity, attributes, request):
    """Every row a tenant writes is its own."""
    for name, value in attributes.items():
        setattr(entity, name, value)
    entity.tenant = request.tenant


def own_queues_only(request, write):
    """A client-made queue id names the tenant: only its own."""
    creates_queue = write.kind == "create" and write.context.definition.type == "queues"
    if creates_queue and not str(write.data.get("id", "")).startswith(request.tenant + "~"):
        raise Forbidden("A queue's id starts with your tenant.")


class CloseBody(colander.MappingSchema):
    reason = colander.SchemaNode(colander.String(), validator=colander.Length(min=3))


def close(context, request):
    validated(request, CloseBody, request_data(request))
    context.entity.status = "closed"
    return no_content(request)


def make_app(url: str) -> Any:
    with Configurator(settings={"sqlalchemy.url": url, "jsonapi.cursor_secret": "helpdesk-" + "s" * 32}) as config:
        config.include("jsonapi_pyramid.db")
        config.include("jsonapi_pyramid")
        config.add_request_method(tenant_of, "tenant", reify=True)
        config.add_jsonapi_resource(Queue, client_ids=True, writable=("name",), apply=apply_tenant,
                                    visible=lambda request: Queue.tenant == request.tenant)
        config.add_jsonapi_resource(Ticket, writable=("title", "priority", "status", "sla", "queue"), apply=apply_tenant,
                                    visible=lambda request: (Ticket.tenant == request.tenant) & Ticket.deleted_at.is_(None),
                                    stats={"priority": ("count", "minimum", "maximum"), "sla": ("minimum", "maximum")})
        config.add_jsonapi_write_check(own_queues_only)
        config.add_jsonapi_operation(Ticket, "close", close)
    return config.make_wsgi_app()


@pytest.fixture(scope="module", params=BACKENDS)
def helpdesk(request: Any, tmp_path_factory: Any) -> Any:
    with backend_database(request.param, tmp_path_factory, "jsonapi_helpdesk") as url:
        engine = create_engine(url)
        Base.metadata.create_all(engine)
        app = make_app(url)
        yield app, engine
        app.registry["db.engine"].dispose()
        Base.metadata.drop_all(engine)
        engine.dispose()


@pytest.fixture
def desk(helpdesk: Any) -> Any:
    """``desk(tenant)``: a client of that tenant."""
    app, engine = helpdesk
    yield lambda tenant: webtest.TestApp(app, extra_environ={"HTTP_HOST": "desk.test", "HTTP_X_TENANT": tenant})
    with engine.begin() as connection:
        for table in reversed(Base.metadata.sorted_tables):
            connection.execute(table.delete())


def send(client: Any, method: str, url: str, data: Any, status: int) -> Any:
    return getattr(client, method)(url, orjson.dumps({"data": data}), status=status, headers={"Content-Type": MEDIA_TYPE})


def _seed(client: Any, tenant: str) -> dict[str, Any]:
    queue = send(client, "post", "/api/queues", {"type": "queues", "id": f"{tenant}~support", "attributes": {"name": "Support"}}, 201)
    tickets = [send(client, "post", "/api/tickets", {"type": "tickets", "attributes": {
        "title": f"{tenant} ticket {n}", "priority": priority, "sla": sla},
        "relationships": {"queue": {"data": {"type": "queues", "id": f"{tenant}~support"}}}}, 201).json["data"]
        for n, (priority, sla) in enumerate([("high", "PT4H30M"), ("low", "P1DT2H"), ("normal", "PT45M")])]
    return {"queue": queue.json["data"], "tickets": tickets}


def _ids(response: Any) -> list[str]:
    return [item["id"] for item in response.json["data"]]


def test_a_tenant_never_sees_another_s_rows(desk: Any) -> None:
    acme, beta = desk("acme"), desk("beta")
    mine, theirs = _seed(acme, "acme"), _seed(beta, "beta")
    own = sorted(ticket["id"] for ticket in mine["tickets"])
    assert sorted(_ids(acme.get("/api/tickets"))) == own
    assert acme.get("/api/tickets", params={"meta[tickets]": "totalCount,estimatedCount"}).json["meta"] == {
        "totalCount": 3, "estimatedCount": 3, "estimatedCountExact": True}
    assert acme.get("/api/tickets", params={"stats[total]": "count"}).json["meta"]["stats"]["total"] == {"count": 3}
    assert sorted(_ids(acme.get("/api/tickets", params={"filter[queue]": "beta~support"}))) == []
    other = theirs["tickets"][0]["id"]
    acme.get(f"/api/tickets/{other}", status=404)
    send(acme, "patch", f"/api/tickets/{other}", {"type": "tickets", "id": other, "attributes": {"title": "x"}}, 404)
    acme.get("/api/queues/beta~support", status=404)
    included = acme.get("/api/queues/acme~support", params={"include": "tickets"}).json["included"]
    assert sorted(item["id"] for item in included) == own
    # linking another tenant's queue: it does not exist for this caller
    error = send(acme, "post", "/api/tickets", {"type": "tickets", "attributes": {"title": "t"}, "relationships": {
        "queue": {"data": {"type": "queues", "id": "beta~support"}}}}, 422).json["errors"][0]
    assert error["source"]["pointer"] == "/data/relationships/queue/data"
    send(acme, "post", "/api/queues", {"type": "queues", "id": "beta~sales", "attributes": {"name": "S"}}, 403)


def test_enum_workflow_interval_sla_and_composite_queue(desk: Any) -> None:
    acme = desk("acme")
    tickets = _seed(acme, "acme")["tickets"]
    assert [t["attributes"]["priority"] for t in tickets] == ["high", "low", "normal"]
    assert [t["attributes"]["sla"] for t in tickets] == ["PT4H30M", "P1DT2H", "PT45M"]
    for _ in range(2):  # the kept statements' second runs too
        assert _ids(acme.get("/api/tickets", params={"filter[priority]": "high"})) == [tickets[0]["id"]]
        assert _ids(acme.get("/api/tickets", params={"sort": "-priority"})) == [tickets[n]["id"] for n in (0, 2, 1)]
        assert _ids(acme.get("/api/tickets", params={"filter[sla][gt]": "PT1H", "sort": "sla"})) == [
            tickets[0]["id"], tickets[1]["id"]]
        stats = acme.get("/api/tickets", params={"stats[priority]": "minimum,maximum", "stats[sla]": "maximum",
                                                 "group": "priority"}).json["meta"]["stats"]
        assert stats["priority"] == {"minimum": "low", "maximum": "high"} and stats["sla"] == {"maximum": "P1DT2H"}
        assert sorted(group["key"]["priority"] for group in stats["groups"]) == ["high", "low", "normal"]
        first = acme.get("/api/tickets", params={"sort": "priority", "page[size]": "1"}, headers={"Accept": CURSOR}).json
        following = acme.get(first["links"]["next"], headers={"Accept": CURSOR}).json
        assert _ids(webtest_json(first)) + _ids(webtest_json(following)) == [tickets[1]["id"], tickets[2]["id"]]
        queue = acme.get(f"/api/tickets/{tickets[0]['id']}/queue").json["data"]
        assert queue["id"] == "acme~support" and queue["links"]["self"].endswith("/api/queues/acme~support")
    error = send(acme, "patch", f"/api/tickets/{tickets[0]['id']}", {"type": "tickets", "id": tickets[0]["id"],
                                                                     "attributes": {"sla": "4 hours"}}, 422).json["errors"][0]
    assert error["source"]["pointer"] == "/data/attributes/sla"
    error = acme.post(f"/api/tickets/{tickets[0]['id']}/close", orjson.dumps({"data": {"reason": "x"}}), status=422,
                      headers={"Content-Type": MEDIA_TYPE}).json["errors"][0]
    assert error["source"]["pointer"] == "/data/reason"
    acme.post(f"/api/tickets/{tickets[0]['id']}/close", orjson.dumps({"data": {"reason": "fixed"}}), status=204,
              headers={"Content-Type": MEDIA_TYPE})
    assert acme.get(f"/api/tickets/{tickets[0]['id']}").json["data"]["attributes"]["status"] == "closed"


def webtest_json(document: Any) -> Any:
    """A document as ``_ids`` reads a response."""
    return type("Answer", (), {"json": document})


# -- the conformance kit ---------------------------------------------------------------------------

test_conformance = conformance(lambda: make_app("sqlite://"))


@pytest.fixture
def jsonapi_client(desk: Any) -> Any:
    return desk("kit")


@pytest.fixture
def jsonapi_factories() -> Any:
    return {
        "queues": lambda kit, n: {"id": f"kit~q{n}-{uuid.uuid4().hex[:6]}", "attributes": {"name": f"Queue {n}"}},
        "tickets": lambda kit, n: {"attributes": {"title": f"Ticket {n}", "priority": ("low", "normal", "high")[n % 3],
                                                  "sla": f"PT{n + 1}H"},
                                   "relationships": {"queue": {"data": kit.create("queues")}}},
    }
