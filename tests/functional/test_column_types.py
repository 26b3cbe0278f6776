"""One value per column type on every backend: what a document shows is what a filter, a sort
and a write compare (a model of the test's own, on SQLite and on a PostgreSQL database whose
collation and character type are ``C``, where ``lower()`` folds ASCII only)."""
from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import enum
import os
import uuid

import colander
import orjson
import pytest
import webtest
from pyramid.config import Configurator
from sqlalchemy import DateTime, Enum, Numeric, String, create_engine, func, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from jsonapi_pyramid import RelationshipsCollection, Transformer
from tests.conftest import BACKENDS, DEFAULT_PG_URL

MEDIA_TYPE = "application/vnd.api+json"


class Base(DeclarativeBase):
    pass


class Size(enum.Enum):
    """Declared neither in the order of its names nor of its values."""

    SMALL = "s"
    LARGE = "l"
    MEDIUM = "m"


class Product(Base):
    __tablename__ = "products"
    __jsonapi_type__ = "products"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(100))
    price: Mapped[decimal.Decimal | None] = mapped_column(Numeric(10, 2))
    # declared in an order that is not the alphabetical one
    condition: Mapped[str] = mapped_column(Enum("new", "used", "refurbished", name="product_condition"), default="new")
    created_at: Mapped[object] = mapped_column(DateTime, server_default=func.now())
    checked_at: Mapped[object | None] = mapped_column(DateTime(timezone=True))
    size: Mapped[Size | None] = mapped_column(Enum(Size, name="product_size"))

    @classmethod
    def transformer(cls):
        return ProductTransformer()

    @classmethod
    def relationships(cls):
        return RelationshipsCollection()


class ProductTransformer(Transformer):
    attributes = ("name", "price", "condition", "createdAt", "checkedAt", "size")


class Offer(Base):
    """A decimal that a colander node converts (to a float) before its column keeps it."""

    __tablename__ = "offers"
    __jsonapi_type__ = "offers"
    id: Mapped[int] = mapped_column(primary_key=True)
    rate: Mapped[decimal.Decimal] = mapped_column(Numeric(4, 3))

    @classmethod
    def transformer(cls):
        return OfferTransformer()

    @classmethod
    def relationships(cls):
        return RelationshipsCollection()


class OfferTransformer(Transformer):
    attributes = ("rate",)


class OfferSchema(colander.MappingSchema):
    rate = colander.SchemaNode(colander.Float())


@contextlib.contextmanager
def _database(backend, tmp_path_factory):
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path_factory.mktemp('types')}/types.sqlite"
        return
    server = make_url(os.environ.get("TEST_DATABASE_URL") or DEFAULT_PG_URL).set(drivername="postgresql+psycopg")
    admin = create_engine(server.set(database="postgres"), isolation_level="AUTOCOMMIT")
    name = f"jsonapi_types_{uuid.uuid4().hex[:12]}"
    with admin.connect() as connection:  # the worst cases: the C locale (case folding), a server far from UTC
        connection.execute(text(f"CREATE DATABASE \"{name}\" TEMPLATE template0 ENCODING 'UTF8' "
                                "LC_COLLATE 'C' LC_CTYPE 'C'"))
        connection.execute(text(f"ALTER DATABASE \"{name}\" SET timezone TO 'Asia/Tokyo'"))
    try:
        yield server.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture(scope="module", params=BACKENDS)
def shop(request, tmp_path_factory):
    with _database(request.param, tmp_path_factory) as url:
        engine = create_engine(url)
        Base.metadata.create_all(engine)
        with Configurator(settings={"sqlalchemy.url": url}) as config:
            config.include("jsonapi_pyramid.db")
            config.include("jsonapi_pyramid")
            config.add_jsonapi_resource(Product, writable=("name", "price", "condition", "checkedAt", "size"))
            config.add_jsonapi_resource(Offer, create=OfferSchema)
        app = config.make_wsgi_app()
        yield webtest.TestApp(app, extra_environ={"HTTP_HOST": "example.test"}), engine
        app.registry["db.engine"].dispose()
        Base.metadata.drop_all(engine)
        engine.dispose()


@pytest.fixture
def api(shop):
    app, engine = shop
    yield app
    with engine.begin() as connection:
        connection.execute(text("DELETE FROM products"))
        connection.execute(text("DELETE FROM offers"))


def post(api, attributes, status=201):
    body = orjson.dumps({"data": {"type": "products", "attributes": attributes}})
    return api.post("/api/products", body, status=status, headers={"Content-Type": MEDIA_TYPE})


def ids(api, **params):
    return [item["id"] for item in api.get("/api/products", params=params).json["data"]]


# -- Numeric ---------------------------------------------------------------------------------------

def test_a_numeric_is_kept_at_its_scale_and_found_by_the_value_shown(api):
    sum_of_floats = post(api, {"name": "a", "price": 0.1 + 0.2}).json["data"]
    assert sum_of_floats["attributes"]["price"] == "0.30"
    assert api.get(sum_of_floats["links"]["self"]).json["data"]["attributes"]["price"] == "0.30"
    assert ids(api, **{"filter[price]": "0.30"}) == [sum_of_floats["id"]]
    assert ids(api, **{"filter[price]": "0.3"}) == [sum_of_floats["id"]]
    # half away from zero, as PostgreSQL rounds a numeric, on every backend
    tie = post(api, {"name": "b", "price": "1.005"}).json["data"]
    assert tie["attributes"]["price"] == "1.01"
    assert api.get(tie["links"]["self"]).json["data"]["attributes"]["price"] == "1.01"
    negative = post(api, {"name": "c", "price": "-2.675"}).json["data"]
    assert negative["attributes"]["price"] == "-2.68"
    assert ids(api, **{"filter[price][gte]": "1.01"}) == [tie["id"]]
    assert ids(api, **{"filter[price][lt]": "1.01", "sort": "price"}) == [negative["id"], sum_of_floats["id"]]


def test_a_numeric_with_more_digits_before_the_point_than_its_column_holds_is_a_422(api):
    error = post(api, {"name": "a", "price": "123456789.5"}, status=422).json["errors"][0]
    assert error["source"] == {"pointer": "/data/attributes/price"}
    assert ids(api) == []


def test_a_numeric_a_colander_node_converts_is_kept_at_its_column_s_scale_too(api):
    body = orjson.dumps({"data": {"type": "offers", "attributes": {"rate": 0.0625}}})
    made = api.post("/api/offers", body, status=201, headers={"Content-Type": MEDIA_TYPE}).json["data"]
    assert made["attributes"]["rate"] == api.get(made["links"]["self"]).json["data"]["attributes"]["rate"] == "0.063"
    assert [item["id"] for item in api.get("/api/offers", params={"filter[rate]": "0.063"}).json["data"]] == [made["id"]]
    body = orjson.dumps({"data": {"type": "offers", "attributes": {"rate": 10.5}}})
    error = api.post("/api/offers", body, status=422, headers={"Content-Type": MEDIA_TYPE}).json["errors"][0]
    assert error["source"] == {"pointer": "/data/attributes/rate"}


# -- timestamps ------------------------------------------------------------------------------------

@pytest.mark.parametrize("stored", ["2026-11-25 19:29:01", "2026-11-25 19:29:01.250", "2026-11-25 19:29:01.250001"])
def test_a_timestamp_compares_as_it_is_shown_whatever_wrote_it(api, shop, stored):
    made = post(api, {"name": "a"}).json["data"]
    default = api.get(made["links"]["self"]).json["data"]["attributes"]["createdAt"]
    assert ids(api, **{"filter[createdAt][eq]": default}) == [made["id"]]  # the server's default
    with shop[1].begin() as connection:  # another writer, in the database's own text
        connection.execute(text(f"UPDATE products SET created_at = '{stored}'"))
    shown = api.get(made["links"]["self"]).json["data"]["attributes"]["createdAt"]
    assert shown.startswith("2026-11-25T19:29:01") and shown.endswith("Z")
    for operator in ("eq", "gte", "lte"):
        assert ids(api, **{f"filter[createdAt][{operator}]": shown}) == [made["id"]], operator
    for operator in ("ne", "gt", "lt"):
        assert ids(api, **{f"filter[createdAt][{operator}]": shown}) == [], operator
    assert ids(api, **{"filter[createdAt][in]": f"2020-01-01T00:00:00Z,{shown}"}) == [made["id"]]
    assert ids(api, **{"filter[createdAt][gt]": "2026-11-25T19:29:00.999999Z"}) == [made["id"]]
    assert ids(api, **{"filter[createdAt][lt]": "2026-11-25T19:29:01.250002Z"}) == [made["id"]]


def test_timestamps_are_utc_whatever_the_database_server_s_time_zone(api):
    """A timestamp with a time zone is shown in UTC with Z, the database's now() is UTC."""
    before = dt.datetime.now(dt.UTC)
    made = post(api, {"name": "a", "checkedAt": "2026-01-02T03:04:05.5+01:00"}).json["data"]
    shown = api.get(made["links"]["self"]).json["data"]["attributes"]
    assert shown["checkedAt"] == "2026-01-02T02:04:05.500000Z"
    created = dt.datetime.fromisoformat(shown["createdAt"].replace("Z", "+00:00"))
    assert before - dt.timedelta(minutes=5) < created < before + dt.timedelta(minutes=5), shown["createdAt"]
    for operator in ("eq", "gte", "lte"):
        assert ids(api, **{f"filter[checkedAt][{operator}]": shown["checkedAt"]}) == [made["id"]], operator
    assert ids(api, **{"filter[checkedAt][eq]": "2026-01-02T11:04:05.5+09:00"}) == [made["id"]]
    assert ids(api, **{"filter[checkedAt][lt]": shown["checkedAt"]}) == []


# -- case-insensitive operators --------------------------------------------------------------------

def test_case_insensitive_operators_fold_beyond_ascii_on_every_backend(api):
    made = post(api, {"name": "École Ærø ΣΟΦΊΑ"}).json["data"]
    assert ids(api, **{"filter[name][contains]": "École"}) == [made["id"]]
    for value in ("École", "école", "ÉCOLE", "ærø", "ÆRØ", "σοφία", "ΣΟΦΊΑ"):
        assert ids(api, **{"filter[name][icontains]": value}) == [made["id"]], value
    assert ids(api, **{"filter[name][contains]": "école"}) == []


# -- enumerations ----------------------------------------------------------------------------------

def test_an_enum_orders_by_declaration(api):
    made = {condition: post(api, {"name": condition, "condition": condition}).json["data"]["id"]
            for condition in ("refurbished", "new", "used")}
    assert ids(api, sort="condition") == [made["new"], made["used"], made["refurbished"]]
    assert ids(api, sort="-condition") == [made["refurbished"], made["used"], made["new"]]
    assert ids(api, **{"filter[condition][gt]": "new", "sort": "id"}) == sorted([made["used"], made["refurbished"]], key=int)
    assert ids(api, **{"filter[condition][lt]": "refurbished", "sort": "condition"}) == [made["new"], made["used"]]
    assert ids(api, **{"filter[condition][lte]": "used", "sort": "condition"}) == [made["new"], made["used"]]
    assert ids(api, **{"filter[condition][gte]": "used", "sort": "condition"}) == [made["used"], made["refurbished"]]
    assert ids(api, **{"filter[condition][lt]": "new"}) == []


def test_an_enum_of_a_python_enum_class_is_written_shown_filtered_and_sorted_by_its_values(api):
    made = {size: post(api, {"name": size, "size": size}).json["data"] for size in ("m", "s", "l")}
    assert {size: item["attributes"]["size"] for size, item in made.items()} == {"m": "m", "s": "s", "l": "l"}
    assert api.get(made["s"]["links"]["self"]).json["data"]["attributes"]["size"] == "s"
    error = post(api, {"name": "x", "size": "SMALL"}, status=422).json["errors"][0]
    assert error["source"] == {"pointer": "/data/attributes/size"}
    order = [made[size]["id"] for size in ("s", "l", "m")]  # the declaration's
    assert ids(api, sort="size") == order
    assert ids(api, **{"filter[size]": "s"}) == order[:1]
    assert ids(api, **{"filter[size][gt]": "s", "sort": "size"}) == order[1:]
    assert ids(api, **{"filter[size][in]": "m,l", "sort": "size"}) == order[1:]
    assert api.get("/api/products", params={"filter[size]": "SMALL"}, status=400).json["errors"][0]["source"] == {
        "parameter": "filter[size]"}
    schema = api.get("/api/openapi.json").json["components"]["parameters"]
    assert [p["schema"] for p in schema.values() if p.get("name") == "filter[size][lt]"] == [
        {"type": "string", "enum": ["s", "l", "m"]}]


@pytest.mark.parametrize("operator", ["contains", "icontains", "startswith"])
def test_an_enum_takes_no_text_operator(api, operator):
    parameter = f"filter[condition][{operator}]"
    error = api.get("/api/products", params={parameter: "ne"}, status=400).json["errors"][0]
    assert error["source"] == {"parameter": parameter}
    offered = {p.get("name") for p in api.get("/api/openapi.json").json["components"]["parameters"].values()}
    assert parameter not in offered
    assert {"filter[condition][lt]", "filter[condition][in]", "filter[name][icontains]"} <= offered


def test_a_cursor_walk_over_timestamps_the_database_wrote_in_one_second(api, shop):
    """SQLite: ``CURRENT_TIMESTAMP`` text beside SQLAlchemy's; every row once, in order."""
    made = [post(api, {"name": str(n)}).json["data"]["id"] for n in range(4)]
    with shop[1].begin() as connection:
        connection.execute(text("UPDATE products SET created_at = '2026-11-25 19:29:01' WHERE id IN (:a, :b)"),
                           {"a": int(made[0]), "b": int(made[2])})
        connection.execute(text("UPDATE products SET created_at = '2026-11-25 19:29:01.000' WHERE id = :a"),
                           {"a": int(made[1])})
    accept = f'{MEDIA_TYPE}; profile="http://jsonapi.org/profiles/ethanresnick/cursor-pagination/"'
    for sort in ("createdAt", "-createdAt"):
        seen, url = [], f"/api/products?sort={sort}&page[size]=1"
        while url:
            document = api.get(url, headers={"Accept": accept}).json
            seen += [item["id"] for item in document["data"]]
            url = document["links"]["next"]
        assert sorted(seen, key=int) == made and len(seen) == 4, (sort, seen)
        shown = [api.get(f"/api/products/{i}").json["data"]["attributes"]["createdAt"] for i in seen]
        assert shown == sorted(shown, reverse=sort.startswith("-")), shown
