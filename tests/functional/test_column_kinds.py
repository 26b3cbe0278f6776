"""Column kinds on models of the test's own, on SQLite and PostgreSQL (issue 33): an ``Enum``
whose members' names differ from their values shows, groups, orders and carries its values
everywhere a value leaves the database; the OpenAPI request schemas list every attribute a write
takes, with or without a colander node."""
from __future__ import annotations

import base64
import datetime as dt
import enum

import colander
import jsonschema
import orjson
import pytest
import webtest
from pyramid.config import Configurator
from sqlalchemy import JSON, Date, DateTime, Enum, Integer, Interval, String, create_engine, func, text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from jsonapi_pyramid import RelationshipsCollection, Transformer
from tests.conftest import BACKENDS
from tests.functional.test_column_types import _database

MEDIA_TYPE = "application/vnd.api+json"
CURSOR = f'{MEDIA_TYPE}; profile="http://jsonapi.org/profiles/ethanresnick/cursor-pagination/"'


class Base(DeclarativeBase):
    pass


class Priority(enum.Enum):
    """Names that differ from the values; declared in neither's alphabetical order."""

    LOW = "low"
    HIGH = "high"
    URGENT = "urgent"


class Ticket(Base):
    __tablename__ = "tickets"
    __jsonapi_type__ = "tickets"
    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str] = mapped_column(String(100))
    priority: Mapped[Priority | None] = mapped_column(Enum(Priority, name="ticket_priority"))

    @classmethod
    def transformer(cls):
        return TicketTransformer()

    @classmethod
    def relationships(cls):
        return RelationshipsCollection()


class TicketTransformer(Transformer):
    attributes = ("title", "priority")


class Note(Base):
    """Written through a colander schema that knows one attribute, and ``writable=`` that allows more."""

    __tablename__ = "notes"
    __jsonapi_type__ = "notes"
    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str] = mapped_column(String(100))
    status: Mapped[str] = mapped_column(Enum("draft", "published", name="note_status"), default="draft")
    published_on: Mapped[dt.date | None] = mapped_column(Date)
    pages: Mapped[int] = mapped_column(Integer)  # NOT NULL, no default: a create must give it
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, server_default=func.now())

    @classmethod
    def transformer(cls):
        return NoteTransformer()

    @classmethod
    def relationships(cls):
        return RelationshipsCollection()


class NoteTransformer(Transformer):
    attributes = ("title", "status", "publishedOn", "pages", "createdAt")


class Incident(Base):
    __tablename__ = "incidents"
    __jsonapi_type__ = "incidents"
    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str] = mapped_column(String(100))
    resolution_time: Mapped[dt.timedelta | None] = mapped_column(Interval)
    details: Mapped[dict | None] = mapped_column(JSON)

    @classmethod
    def transformer(cls):
        return IncidentTransformer()

    @classmethod
    def relationships(cls):
        return RelationshipsCollection()


class IncidentTransformer(Transformer):
    attributes = ("title", "resolutionTime", "details")


class TitleOnlySchema(colander.MappingSchema):
    title = colander.SchemaNode(colander.String(), validator=colander.Length(min=1, max=100))


@pytest.fixture(scope="module", params=BACKENDS)
def desk(request, tmp_path_factory):
    with _database(request.param, tmp_path_factory) as url:
        engine = create_engine(url)
        Base.metadata.create_all(engine)
        with Configurator(settings={"sqlalchemy.url": url}) as config:
            config.include("jsonapi_pyramid.db")
            config.include("jsonapi_pyramid")
            config.add_jsonapi_resource(Ticket, writable=("title", "priority"))
            config.add_jsonapi_resource(Incident, writable=("title", "resolutionTime", "details"))
            config.add_jsonapi_resource(Note, create=TitleOnlySchema, writable=("title", "status", "publishedOn", "pages"))
        app = config.make_wsgi_app()
        yield webtest.TestApp(app, extra_environ={"HTTP_HOST": "example.test"}), engine
        app.registry["db.engine"].dispose()
        Base.metadata.drop_all(engine)
        engine.dispose()


@pytest.fixture
def api(desk):
    app, engine = desk
    yield app
    with engine.begin() as connection:
        connection.execute(text("DELETE FROM tickets"))
        connection.execute(text("DELETE FROM notes"))
        connection.execute(text("DELETE FROM incidents"))


def post(api, path, attributes, status=201):
    body = orjson.dumps({"data": {"type": path.rsplit("/", 1)[1], "attributes": attributes}})
    return api.post(path, body, status=status, headers={"Content-Type": MEDIA_TYPE})


def tickets(api, priorities):
    return [post(api, "/api/tickets", {"title": f"t{n}", "priority": p}).json["data"]["id"] for n, p in enumerate(priorities)]


# -- an Enum whose names differ from its values --------------------------------------------------

def test_stats_of_an_enum_group_and_bound_it_by_its_values(api):
    tickets(api, ["urgent", "low", "high", "low", None])
    stats = api.get("/api/tickets", params={"stats[total]": "count", "stats[priority]": "count,minimum,maximum",
                                            "group": "priority"}).json["meta"]["stats"]
    # minimum and maximum in the order of the declaration (as sort), groups by the text stored (docs/statistics.rst)
    assert stats["priority"] == {"count": 4, "minimum": "low", "maximum": "urgent"}
    assert [(g["key"], g["stats"]["total"]["count"]) for g in stats["groups"]] == [
        ({"priority": "high"}, 1), ({"priority": "low"}, 2), ({"priority": "urgent"}, 1), ({"priority": None}, 1)]
    assert [g["stats"]["priority"] for g in stats["groups"][:3]] == [
        {"count": 1, "minimum": "high", "maximum": "high"}, {"count": 2, "minimum": "low", "maximum": "low"},
        {"count": 1, "minimum": "urgent", "maximum": "urgent"}]
    # the value a group shows is the value a filter takes
    assert [g["key"] for g in api.get("/api/tickets", params={"stats[total]": "count", "group": "priority",
                                                              "filter[priority]": "high"}).json["meta"]["stats"]["groups"]] == [
        {"priority": "high"}]
    assert api.get("/api/tickets", params={"filter[priority]": "HIGH"}, status=400).json["errors"][0]["source"] == {
        "parameter": "filter[priority]"}


def _carried(link):
    """The values a cursor in ``link`` carries (its payload, before the signature)."""
    cursor = link.split("page[after]=", 1)[1].split("&", 1)[0].split(".", 1)[0]
    return orjson.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))["k"]


@pytest.mark.parametrize("sort", ["priority", "-priority"])
def test_a_cursor_walk_sorted_by_an_enum_whose_names_differ_from_its_values(api, sort):
    made = dict(zip(["h1", "u1", "l1", "h2", "l2"], tickets(api, ["high", "urgent", "low", "high", "low"]), strict=True))
    seen, url, carried = [], f"/api/tickets?sort={sort}&page[size]=2", []
    while url:
        document = api.get(url, headers={"Accept": CURSOR}).json
        seen += [(item["id"], item["attributes"]["priority"]) for item in document["data"]]
        url = document["links"]["next"]
        if url:
            carried += _carried(url)
    order = ["l1", "l2", "h1", "h2", "u1"] if sort == "priority" else ["u1", "h2", "h1", "l2", "l1"]
    assert [item_id for item_id, _ in seen] == [made[name] for name in order]
    assert {priority for _, priority in seen} == {"low", "high", "urgent"}
    assert not {"LOW", "HIGH", "URGENT"} & {value for value in carried if isinstance(value, str)}, carried


# -- Interval: an ISO 8601 duration ----------------------------------------------------------------

DURATIONS = {"PT4H30M": "PT4H30M", "P1DT2H": "P1DT2H", "PT0S": "PT0S", "-PT1H": "-PT1H", "PT0.5S": "PT0.5S",
             "P2W": "P14D", "PT90M": "PT1H30M", "P1DT25H": "P2DT1H", "-P1DT0.000001S": "-P1DT0.000001S", "PT0,25S": "PT0.25S"}


def incidents(api, durations):
    return [post(api, "/api/incidents", {"title": f"i{n}", "resolutionTime": d}).json["data"]["id"] for n, d in enumerate(durations)]


def test_an_interval_is_written_and_shown_as_an_iso_8601_duration(api):
    for sent, shown in DURATIONS.items():
        made = post(api, "/api/incidents", {"title": sent, "resolutionTime": sent}).json["data"]
        assert made["attributes"]["resolutionTime"] == shown, sent
        assert api.get(made["links"]["self"]).json["data"]["attributes"]["resolutionTime"] == shown, sent
    patch = {"data": {"type": "incidents", "id": made["id"], "attributes": {"resolutionTime": None}}}
    assert api.patch(made["links"]["self"], orjson.dumps(patch), headers={"Content-Type": MEDIA_TYPE}).json[
        "data"]["attributes"]["resolutionTime"] is None


@pytest.mark.parametrize("value", [3600, 1.5, True, ["PT1H"], {"hours": 1}, "4:30:00", "1 day, 2:00:00", "P1Y", "P1M",
                                   "PT", "P", "", "PT1.5H", "P1DT", "+PT1H", "PT1H ", "P1000000D", "-P800000D"])
def test_an_interval_that_is_no_iso_8601_duration_is_a_422(api, value):
    error = post(api, "/api/incidents", {"title": "x", "resolutionTime": value}, status=422).json["errors"][0]
    assert error["source"] == {"pointer": "/data/attributes/resolutionTime"}
    assert api.get("/api/incidents").json["data"] == []


def test_an_interval_is_filtered_sorted_and_bounded_by_its_length(api):
    made = dict(zip(["4h30", "1d2h", "0", "-1h", "half", "none"],
                    incidents(api, ["PT4H30M", "P1DT2H", "PT0S", "-PT1H", "PT0.5S", None]), strict=True))

    def found(**params):
        return [item["id"] for item in api.get("/api/incidents", params=params).json["data"]]

    order = [made[n] for n in ("-1h", "0", "half", "4h30", "1d2h")]
    assert found(sort="resolutionTime") == [*order, made["none"]]
    assert found(sort="-resolutionTime") == [*reversed(order), made["none"]]
    assert found(**{"filter[resolutionTime]": "PT4H30M"}) == [made["4h30"]]
    assert found(**{"filter[resolutionTime]": "PT270M"}) == [made["4h30"]]  # the same length, spelt otherwise
    assert found(**{"filter[resolutionTime][gt]": "PT4H", "sort": "resolutionTime"}) == order[3:]
    assert found(**{"filter[resolutionTime][lte]": "PT0S", "sort": "resolutionTime"}) == order[:2]
    assert found(**{"filter[resolutionTime][lt]": "-PT0.5S"}) == [made["-1h"]]
    assert found(**{"filter[resolutionTime][in]": "PT0S,P1DT2H", "sort": "resolutionTime"}) == [made["0"], made["1d2h"]]
    assert found(**{"filter[resolutionTime][ne]": "PT0S", "sort": "resolutionTime"}) == [
        *(o for o in order if o != made["0"]), made["none"]]  # ne: the complement of eq
    for bad in ("4:30:00", "3600", "P1Y"):
        error = api.get("/api/incidents", params={"filter[resolutionTime][gt]": bad}, status=400).json["errors"][0]
        assert error["source"] == {"parameter": "filter[resolutionTime][gt]"}
    assert api.get("/api/incidents", params={"filter[resolutionTime][contains]": "PT"}, status=400).json["errors"][0][
        "source"] == {"parameter": "filter[resolutionTime][contains]"}
    seen, url = [], "/api/incidents?sort=-resolutionTime&page[size]=2"
    while url:  # a cursor carries a duration
        document = api.get(url, headers={"Accept": CURSOR}).json
        seen += [item["id"] for item in document["data"]]
        url = document["links"]["next"]
    assert seen == [*reversed(order), made["none"]]


def test_an_interval_s_minimum_and_maximum_and_its_openapi_schema(api):
    incidents(api, ["PT4H30M", "-PT1H", "P1DT2H", None])
    stats = api.get("/api/incidents", params={"stats[resolutionTime]": "count,minimum,maximum",
                                              "group": "resolutionTime"}).json["meta"]["stats"]
    assert stats["resolutionTime"] == {"count": 3, "minimum": "-PT1H", "maximum": "P1DT2H"}
    assert [g["key"]["resolutionTime"] for g in stats["groups"]] == ["-PT1H", "PT4H30M", "P1DT2H", None]
    error = api.get("/api/incidents", params={"stats[resolutionTime]": "sum"}, status=400).json["errors"][0]
    assert error["source"] == {"parameter": "stats[resolutionTime]"}
    document = api.get("/api/openapi.json").json
    shown = document["components"]["schemas"]["IncidentsResource"]["properties"]["attributes"]["properties"]
    assert shown["resolutionTime"] == {"type": ["string", "null"], "format": "duration"}
    written = document["components"]["schemas"]["IncidentsCreateRequest"]["properties"]["data"]["properties"]["attributes"]
    assert written["properties"]["resolutionTime"] == {"type": ["string", "null"], "format": "duration"}
    parameters = {p["name"]: p["schema"] for p in document["components"]["parameters"].values()}
    assert parameters["filter[resolutionTime][gt]"] == {"type": "string", "format": "duration"}
    assert "filter[resolutionTime][contains]" not in parameters


def test_a_json_attribute_is_shown_and_written_never_filtered_nor_sorted(api):
    made = post(api, "/api/incidents", {"title": "j", "details": {"steps": [1, "two"]}}).json["data"]
    assert api.get(made["links"]["self"]).json["data"]["attributes"]["details"] == {"steps": [1, "two"]}
    for parameter, value in (("filter[details]", "x"), ("sort", "details"), ("sort", "-details")):
        error = api.get("/api/incidents", params={parameter: value}, status=400).json["errors"][0]
        assert error["source"] == {"parameter": parameter}
    names = {p["name"] for p in api.get("/api/openapi.json").json["components"]["parameters"].values()}
    assert "filter[resolutionTime]" in names and not {n for n in names if "details" in n and n.startswith("filter")}


# -- OpenAPI: every writable attribute in the request schemas ------------------------------------

def test_request_schemas_list_the_writable_attributes_a_colander_schema_leaves_out(api):
    schemas = api.get("/api/openapi.json").json["components"]["schemas"]
    create = schemas["NotesCreateRequest"]["properties"]["data"]["properties"]["attributes"]
    update = schemas["NotesUpdateRequest"]["properties"]["data"]["properties"]["attributes"]
    for attributes in (create, update):
        assert set(attributes["properties"]) == {"title", "status", "publishedOn", "pages"}
        assert attributes["additionalProperties"] is False
        assert attributes["properties"]["title"]["maxLength"] == 100  # the colander node's
        assert attributes["properties"]["status"] == {"type": "string", "enum": ["draft", "published"]}
        assert attributes["properties"]["publishedOn"] == {"type": ["string", "null"], "format": "date"}
        assert attributes["properties"]["pages"] == {"type": "integer"}
    assert set(create["required"]) == {"title", "pages"}  # the node's, and a NOT NULL column without default
    assert "required" not in update
    # a nullable enumeration's schema takes null (its type said so, its enum did not)
    ticket = schemas["TicketsResource"]["properties"]["attributes"]["properties"]["priority"]
    assert ticket == {"type": ["string", "null"], "enum": ["low", "high", "urgent", None]}
    # the schema and the write path agree, both ways
    good = {"data": {"type": "notes", "attributes": {"title": "a", "publishedOn": "2026-01-02", "pages": 3}}}
    jsonschema.validate(good, schemas["NotesCreateRequest"])
    made = post(api, "/api/notes", good["data"]["attributes"]).json["data"]
    assert made["attributes"]["publishedOn"] == "2026-01-02"
    for attributes, pointer in (({"title": "a"}, "/data/attributes/pages"),
                                ({"title": "a", "pages": 1, "createdAt": "2026-01-02T00:00:00Z"}, "/data/attributes/createdAt"),
                                ({"title": "a", "pages": "1"}, "/data/attributes/pages")):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({"data": {"type": "notes", "attributes": attributes}}, schemas["NotesCreateRequest"])
        assert post(api, "/api/notes", attributes, status=422).json["errors"][0]["source"] == {"pointer": pointer}
    # the create example (from the colander node, and the columns a create requires besides) is accepted
    document = api.get("/api/openapi.json").json
    example = document["paths"]["/api/notes"]["post"]["requestBody"]["content"][MEDIA_TYPE]["example"]
    jsonschema.validate(example, schemas["NotesCreateRequest"])
    assert post(api, "/api/notes", example["data"]["attributes"]).json["data"]["attributes"]["pages"] == example[
        "data"]["attributes"]["pages"]
    patch = {"data": {"type": "notes", "id": made["id"], "attributes": {"status": "published", "publishedOn": None}}}
    jsonschema.validate(patch, schemas["NotesUpdateRequest"])
    patched = api.patch(made["links"]["self"], orjson.dumps(patch), headers={"Content-Type": MEDIA_TYPE}).json["data"]
    assert patched["attributes"]["status"] == "published" and patched["attributes"]["publishedOn"] is None
