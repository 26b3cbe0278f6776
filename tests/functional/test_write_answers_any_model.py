"""Write answers are read back (issue 25, finding 1) for a model that is not the blog's nor the
catalogue's: a type read as records with a ``Numeric(10, 2)`` and a column the database fills
(``server_default``), written by ``PATCH``/``POST`` and by custom operations answering through the
helpers ``item``, ``created`` and ``collection``. Each answer is what ``GET`` shows right after."""
from __future__ import annotations

import decimal

import orjson
import pytest
import webtest
from pyramid.config import Configurator
from sqlalchemy import Integer, Numeric, String, create_engine, text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from jsonapi_pyramid import RelationshipsCollection, Transformer
from jsonapi_pyramid.operations import collection, created, item
from tests.conftest import BACKENDS, _postgresql_database, _sqlite_database

MEDIA_TYPE = "application/vnd.api+json"


class Base(DeclarativeBase):
    pass


class Price(Base):
    __tablename__ = "prices"
    __jsonapi_type__ = "prices"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    label: Mapped[str] = mapped_column(String(50))
    amount: Mapped[decimal.Decimal] = mapped_column(Numeric(10, 2))
    currency: Mapped[str] = mapped_column(String(3), server_default=text("'EUR'"))

    @classmethod
    def transformer(cls):
        return PriceTransformer()

    @classmethod
    def relationships(cls):
        return RelationshipsCollection()


class PriceTransformer(Transformer):
    attributes = ("label", "amount", "currency")


def halve(context, request):
    """An item operation answering with the resource (``item``)."""
    context.entity.amount = context.entity.amount / 3  # more digits than the column keeps
    return item(request, context.entity)


def copy(context, request):
    """An item operation creating a resource (``created``)."""
    twin = Price(label=context.entity.label + " (copy)", amount=decimal.Decimal("0.1") + decimal.Decimal("0.005"))
    request.dbsession.add(twin)
    return created(request, twin)


def bump_all(context, request):
    """A collection operation answering with a list (``collection``)."""
    prices = list(request.dbsession.query(Price).order_by(Price.id))
    for price in prices:
        price.amount = price.amount + decimal.Decimal("0.001")
    return collection(request, prices)


@pytest.fixture(scope="module", params=BACKENDS)
def prices(request, tmp_path_factory):
    factory = _sqlite_database(tmp_path_factory) if request.param == "sqlite" else _postgresql_database("prices")
    with factory as url:
        engine = create_engine(url)
        Base.metadata.create_all(engine)
        engine.dispose()
        with Configurator(settings={"sqlalchemy.url": url, "retry.attempts": "1"}) as config:
            config.include("jsonapi_pyramid.db")
            config.include("jsonapi_pyramid")
            config.add_jsonapi_resource(Price, writable=("label", "amount"))
            config.add_jsonapi_operation(Price, "halve", halve, on="item", request_method="POST", conditional=True)
            config.add_jsonapi_operation(Price, "copy", copy, on="item", request_method="POST")
            config.add_jsonapi_operation(Price, "bump", bump_all, on="collection", request_method="POST")
        app = config.make_wsgi_app()
        yield webtest.TestApp(app, extra_environ={"HTTP_HOST": "example.test"})
        app.registry["db.engine"].dispose()


def send(app, method, url, data=None, status=200, **headers):
    body = b"" if data is None else orjson.dumps({"data": data})
    return app.request(url, method=method, body=body, status=status,
                       headers={"Host": "example.test", "Content-Type": MEDIA_TYPE, **headers})


def test_patch_and_post_answer_what_get_shows(prices):
    made = send(prices, "POST", "/api/prices", {"type": "prices", "attributes": {"label": "a", "amount": "12.5"}}, 201)
    url = made.headers["Location"]
    shown = prices.get(url)
    assert made.json["data"]["attributes"] == {"label": "a", "amount": "12.50", "currency": "EUR"}
    assert made.body == shown.body and made.headers["ETag"] == shown.headers["ETag"]
    patched = send(prices, "PATCH", url, {"type": "prices", "id": made.json["data"]["id"], "attributes": {"amount": 3}},
                   200, **{"If-Match": made.headers["ETag"]})
    shown = prices.get(url)
    assert patched.json["data"]["attributes"]["amount"] == "3.00"
    assert patched.body == shown.body and patched.headers["ETag"] == shown.headers["ETag"]
    send(prices, "PATCH", url, {"type": "prices", "id": made.json["data"]["id"], "attributes": {"label": "b"}}, 200,
         **{"If-Match": patched.headers["ETag"]})


def test_custom_operation_helpers_answer_what_get_shows(prices):
    made = send(prices, "POST", "/api/prices", {"type": "prices", "attributes": {"label": "c", "amount": "10"}}, 201)
    url = made.headers["Location"]
    halved = send(prices, "POST", f"{url}/halve", status=200, **{"If-Match": made.headers["ETag"]})
    shown = prices.get(url)
    assert halved.json["data"] == shown.json["data"]
    assert halved.json["data"]["attributes"]["amount"] == "3.33"
    assert halved.headers["X-Resource-ETag"] == shown.headers["ETag"]
    send(prices, "POST", f"{url}/halve", status=200, **{"If-Match": halved.headers["X-Resource-ETag"]})
    copied = send(prices, "POST", f"{url}/copy", status=201)
    assert copied.json["data"] == prices.get(copied.headers["Location"]).json["data"]
    assert copied.json["data"]["attributes"]["currency"] == "EUR"  # the database's default, read back
    bumped = send(prices, "POST", "/api/prices/bump", status=200)
    listed = prices.get("/api/prices").json["data"]
    assert bumped.json["data"] == [item for item in listed if item["id"] in {d["id"] for d in bumped.json["data"]}]


def test_a_minimal_patch_answers_204_with_the_tag_get_shows(prices):
    """``Prefer: return=minimal`` (prefer.py) on a model of the test's own, read as records."""
    made = send(prices, "POST", "/api/prices", {"type": "prices", "attributes": {"label": "m", "amount": "1"}}, 201,
                Prefer="return=minimal")
    assert made.json["data"]["attributes"]["amount"] == "1.00" and "Preference-Applied" not in made.headers
    url, resource_id = made.headers["Location"], made.json["data"]["id"]
    patched = send(prices, "PATCH", url, {"type": "prices", "id": resource_id, "attributes": {"amount": "2.5"}}, 204,
                   Prefer="return=minimal", **{"If-Match": made.headers["ETag"]})
    shown = prices.get(url)
    assert patched.body == b"" and patched.headers["Preference-Applied"] == "return=minimal"
    assert shown.json["data"]["attributes"]["amount"] == "2.50"  # kept at the column's scale, read back
    assert patched.headers["ETag"] == shown.headers["ETag"]
    send(prices, "PATCH", url, {"type": "prices", "id": resource_id, "attributes": {"label": "n"}}, 204,
         Prefer="return=minimal", **{"If-Match": patched.headers["ETag"]})
