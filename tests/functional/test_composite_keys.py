"""Composite primary keys (``identifiers.IdKey``): a model of the test's own whose key is
``(tenant text, number integer)``, served through every endpoint on both backends, its id the
parts joined by ``~`` (``%``, ``,``, ``/`` and ``~`` of a part percent-escaped); invoices linked
to it by a two-column foreign key, tags through an association table keyed by it."""
from __future__ import annotations

import contextlib
import uuid
from urllib.parse import quote

import orjson
import pytest
import webtest
from openapi_spec_validator import validate
from pyramid.config import Configurator
from sqlalchemy import BigInteger, Column, ForeignKey, ForeignKeyConstraint, Integer, String, Table, Uuid, create_engine, event, text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from jsonapi_pyramid import RelationshipsCollection, ToManyRelationship, ToOneRelationship, Transformer, count_of
from jsonapi_pyramid.testing import conformance
from tests.conftest import BACKENDS, backend_database

MEDIA_TYPE = "application/vnd.api+json"
ATOMIC = 'application/vnd.api+json; ext="https://jsonapi.org/ext/atomic"'
CURSOR = 'application/vnd.api+json; profile="http://jsonapi.org/profiles/ethanresnick/cursor-pagination/"'
#: a key part with every character the spelling escapes, and more that an URL escapes
AWKWARD = "a/b,c~d%e f?g#h"


class Base(DeclarativeBase):
    pass


account_tags = Table(
    "ck_account_tags", Base.metadata,
    Column("tenant", String(40), primary_key=True),
    Column("account_number", Integer, primary_key=True),
    Column("tag_id", ForeignKey("ck_tags.id", ondelete="CASCADE"), primary_key=True),
    ForeignKeyConstraint(["tenant", "account_number"], ["ck_accounts.tenant", "ck_accounts.number"], ondelete="CASCADE"),
)


class Account(Base):
    __tablename__ = "ck_accounts"
    __jsonapi_type__ = "accounts"
    tenant: Mapped[str] = mapped_column(String(40), primary_key=True)
    number: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    name: Mapped[str] = mapped_column(String(100))
    invoices: Mapped[list[Invoice]] = relationship(back_populates="account", passive_deletes=True)
    tags: Mapped[list[Tag]] = relationship(secondary=account_tags, back_populates="accounts", passive_deletes=True)

    @classmethod
    def transformer(cls):
        return AccountTransformer()

    @classmethod
    def relationships(cls):
        return RelationshipsCollection(ToManyRelationship.create("invoices", Invoice, mapped_by="account"),
                                       ToManyRelationship.create("tags", Tag, mapped_by="accounts"))


class AccountTransformer(Transformer):
    attributes = ("name",)
    available_metas = ("invoicesCount",)
    meta_invoices_count = count_of("invoices")


class Invoice(Base):
    """Linked to its account by a two-column foreign key."""

    __tablename__ = "ck_invoices"
    __jsonapi_type__ = "invoices"
    __table_args__ = (ForeignKeyConstraint(["tenant", "account_number"], ["ck_accounts.tenant", "ck_accounts.number"],
                                           ondelete="CASCADE"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    tenant: Mapped[str | None] = mapped_column(String(40))
    account_number: Mapped[int | None] = mapped_column()
    amount: Mapped[int] = mapped_column()
    account: Mapped[Account | None] = relationship(back_populates="invoices")

    @classmethod
    def transformer(cls):
        return InvoiceTransformer()

    @classmethod
    def relationships(cls):
        return RelationshipsCollection(ToOneRelationship.create("account", Account, mapped_by="invoices"))


class InvoiceTransformer(Transformer):
    attributes = ("amount",)


class Tag(Base):
    __tablename__ = "ck_tags"
    __jsonapi_type__ = "tags"
    id: Mapped[int] = mapped_column(primary_key=True)
    label: Mapped[str] = mapped_column(String(40))
    accounts: Mapped[list[Account]] = relationship(secondary=account_tags, back_populates="tags")

    @classmethod
    def transformer(cls):
        return TagTransformer()

    @classmethod
    def relationships(cls):
        return RelationshipsCollection(ToManyRelationship.create("accounts", Account, mapped_by="tags"))


class TagTransformer(Transformer):
    attributes = ("label",)


class Slot(Base):
    """A key of a native UUID and a big integer."""

    __tablename__ = "ck_slots"
    __jsonapi_type__ = "slots"
    region: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True)
    position: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    label: Mapped[str] = mapped_column(String(40))

    @classmethod
    def transformer(cls):
        return SlotTransformer()

    @classmethod
    def relationships(cls):
        return RelationshipsCollection()


class SlotTransformer(Transformer):
    attributes = ("label",)


#: accounts of the tenant "secret" are hidden from every caller (the visibility rule, one criterion object)
HIDDEN = Account.tenant != "secret"


def make_app(url):
    with Configurator(settings={"sqlalchemy.url": url}) as config:
        config.include("jsonapi_pyramid.db")
        config.include("jsonapi_pyramid")
        config.add_jsonapi_resource(Account, client_ids=True, writable=("name",), sortable=("name", "invoices.count"),
                                    visible=lambda request: HIDDEN,
                                    filterable=("name", "invoices", "tags", "invoices.amount"))
        config.add_jsonapi_resource(Invoice, writable=("amount",), filterable=("amount", "account", "account.name", "account.id"),
                                    sortable=("amount", "account.id"))
        config.add_jsonapi_resource(Tag, writable=("label",))
        config.add_jsonapi_resource(Slot, client_ids=True, writable=("label",))
    return config.make_wsgi_app()


@pytest.fixture(scope="module", params=BACKENDS)
def served(request, tmp_path_factory):
    with backend_database(request.param, tmp_path_factory, "jsonapi_composite") as url:
        engine = create_engine(url)
        Base.metadata.create_all(engine)
        app = make_app(url)
        yield app, engine
        app.registry["db.engine"].dispose()
        Base.metadata.drop_all(engine)
        engine.dispose()


@pytest.fixture
def api(served):
    app, engine = served
    yield webtest.TestApp(app, extra_environ={"HTTP_HOST": "example.test"})
    with engine.begin() as connection:
        for table in reversed(Base.metadata.sorted_tables):
            connection.execute(table.delete())


def post(api, type_, resource, status=201):
    body = orjson.dumps({"data": {"type": type_, **resource}})
    return api.post(f"/api/{type_}", body, status=status, headers={"Content-Type": MEDIA_TYPE})


def patch(api, url, resource, status=200):
    return api.patch(url, orjson.dumps({"data": resource}), status=status, headers={"Content-Type": MEDIA_TYPE})


def account(api, resource_id, name="x"):
    return post(api, "accounts", {"id": resource_id, "attributes": {"name": name}}).json["data"]


@contextlib.contextmanager
def counted(api):
    """The SQL statements run inside the block."""
    statements = []
    engine = api.app.registry["db.engine"]

    def record(conn, cursor, statement, *rest):
        statements.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield statements
    finally:
        event.remove(engine, "before_cursor_execute", record)


def ids(api, url="/api/accounts", **params):
    return [item["id"] for item in api.get(url, params=params).json["data"]]


def test_an_item_is_read_created_updated_and_deleted_by_its_composite_id(api):
    made = account(api, "acme~7", "Seven")
    assert made["id"] == "acme~7"
    assert made["links"]["self"] == "http://example.test/api/accounts/acme~7"
    with counted(api) as statements:  # the row and its tag's linkage, in one statement
        assert api.get("/api/accounts/acme~7").json["data"]["attributes"] == {"name": "Seven"}
    assert len(statements) == 1, statements
    patched = patch(api, "/api/accounts/acme~7", {"type": "accounts", "id": "acme~7", "attributes": {"name": "Sept"}})
    assert patched.json["data"]["attributes"] == {"name": "Sept"}
    error = patch(api, "/api/accounts/acme~7", {"type": "accounts", "id": "acme~8", "attributes": {"name": "?"}}, 422)
    assert error.json["errors"][0]["source"] == {"pointer": "/data/id"}
    api.delete("/api/accounts/acme~7", status=204)
    api.get("/api/accounts/acme~7", status=404)


def test_another_row_sharing_one_part_of_the_key_is_another_resource(api):
    account(api, "acme~7", "Acme seven")
    account(api, "acme~8", "Acme eight")
    account(api, "beta~7", "Beta seven")
    assert api.get("/api/accounts/beta~7").json["data"]["attributes"]["name"] == "Beta seven"
    patch(api, "/api/accounts/acme~8", {"type": "accounts", "id": "acme~8", "attributes": {"name": "Eight"}})
    api.delete("/api/accounts/acme~7", status=204)
    assert {item["id"]: item["attributes"]["name"] for item in api.get("/api/accounts").json["data"]} == {
        "acme~8": "Eight", "beta~7": "Beta seven"}


def test_any_text_and_any_integer_round_trip_through_the_id_and_its_link(api):
    made = account(api, "a%2Fb%2Cc%7Ed%25e f?g#h~-3")
    assert made["id"] == "a%2Fb%2Cc%7Ed%25e f?g#h~-3"
    # the link percent-encodes the id once more: the URL path holds it verbatim after decoding
    assert made["links"]["self"] == "http://example.test/api/accounts/a%252Fb%252Cc%257Ed%2525e%20f%3Fg%23h~-3"
    read = api.get(made["links"]["self"]).json["data"]
    assert read["id"] == made["id"]
    assert ids(api, **{"filter[id]": made["id"]}) == [made["id"]]
    with api.app.registry["db.engine"].connect() as connection:
        assert connection.execute(text("SELECT tenant, number FROM ck_accounts")).all() == [(AWKWARD, -3)]


@pytest.mark.parametrize("spelling", ["acme~07", "acme~+7", "acme", "acme~7~1", "acm%65~7", "acme~7 ", "acme%7e~7", "~7"])
def test_an_id_in_another_spelling_names_nothing(api, spelling):
    account(api, "acme~7")
    account(api, "acme%7E~7")
    api.get(f"/api/accounts/{quote(spelling)}", status=404)


def test_a_key_of_a_uuid_and_a_big_integer(api):
    region = "0f8fad5b-d9cb-469f-a165-70867728950e"
    made = [post(api, "slots", {"id": f"{region}~{position}", "attributes": {"label": str(position)}}).json["data"]["id"]
            for position in (-(2 ** 62), 0, 2 ** 62)]
    assert made == [f"{region}~-{2 ** 62}", f"{region}~0", f"{region}~{2 ** 62}"]
    assert api.get(f"/api/slots/{made[2]}").json["data"]["attributes"] == {"label": str(2 ** 62)}
    api.get(f"/api/slots/{region.upper()}~0", status=404)
    assert ids(api, "/api/slots", **{"filter[id]": f"{made[2]},{made[0]}", "sort": "-id"}) == [made[2], made[0]]
    assert ids(api, "/api/slots", **{"filter[id][nin]": made[1]}, sort="id") == [made[0], made[2]]
    api.delete(f"/api/slots/{made[1]}", status=204)
    assert ids(api, "/api/slots", sort="id") == [made[0], made[2]]


def test_a_client_id_is_required_checked_and_new(api):
    error = post(api, "accounts", {"attributes": {"name": "x"}}, 422).json["errors"][0]
    assert error["source"] == {"pointer": "/data/id"}
    error = post(api, "accounts", {"id": "acme~x", "attributes": {"name": "x"}}, 422).json["errors"][0]
    assert error["source"] == {"pointer": "/data/id"}
    account(api, "acme~7")
    error = post(api, "accounts", {"id": "acme~7", "attributes": {"name": "x"}}, 409).json["errors"][0]
    assert error["source"] == {"pointer": "/data/id"}


def test_filter_by_id_takes_a_list_of_composite_ids(api):
    for resource_id in ("acme~1", "acme~2", "beta~1", "a%2Cb~1"):
        account(api, resource_id)
    with counted(api) as statements:
        assert ids(api, **{"filter[id]": "acme~2,beta~1", "sort": "id"}) == ["acme~2", "beta~1"]
    assert len(statements) == 1, statements
    assert ids(api, **{"filter[id][in]": "a%2Cb~1,acme~1", "sort": "id"}) == ["a%2Cb~1", "acme~1"]
    assert ids(api, **{"filter[id][ne]": "acme~1", "sort": "-id"}) == ["beta~1", "acme~2", "a%2Cb~1"]
    assert ids(api, **{"filter[id][nin]": "acme~1,acme~2", "sort": "id"}) == ["a%2Cb~1", "beta~1"]
    assert ids(api, **{"filter[id]": "acme~3"}) == []
    assert ids(api, **{"filter[id]": "acme~02"}) == ["acme~2"]  # a filter compares values
    error = api.get("/api/accounts", params={"filter[id]": "acme"}, status=400).json["errors"][0]
    assert error["source"] == {"parameter": "filter[id]"}
    error = api.get("/api/accounts", params={"filter[id][gt]": "acme~1"}, status=400).json["errors"][0]
    assert error["source"] == {"parameter": "filter[id][gt]"}


def test_pages_sort_by_another_column_then_by_every_key_column(api):
    for resource_id, name in (("b~2", "same"), ("a~2", "same"), ("b~1", "same"), ("a~10", "first")):
        account(api, resource_id, name)
    assert ids(api, sort="name") == ["a~10", "a~2", "b~1", "b~2"]
    assert ids(api, sort="-name") == ["b~2", "b~1", "a~2", "a~10"]
    assert ids(api, **{"sort": "name", "page[number]": "2", "page[size]": "2"}) == ["b~1", "b~2"]
    seen, url = [], "/api/accounts?sort=name&page[size]=1"
    while url:
        with counted(api) as statements:
            document = api.get(url, headers={"Accept": CURSOR}).json
        assert len(statements) == 1, statements
        seen.extend(item["id"] for item in document["data"])
        url = document["links"].get("next")
    assert seen == ["a~10", "a~2", "b~1", "b~2"]
    document = api.get("/api/accounts?sort=-id&page[size]=3", headers={"Accept": CURSOR}).json
    assert [item["id"] for item in document["data"]] == ["b~2", "b~1", "a~10"]
    assert [item["id"] for item in api.get(document["links"]["next"]).json["data"]] == ["a~2"]


def test_atomic_operations_create_update_and_delete_by_composite_id(api):
    operations = [
        {"op": "add", "data": {"type": "accounts", "id": "acme~1", "attributes": {"name": "One"}}},
        {"op": "update", "ref": {"type": "accounts", "id": "acme~1"}, "data": {"type": "accounts", "id": "acme~1",
                                                                               "attributes": {"name": "Uno"}}},
        {"op": "add", "data": {"type": "accounts", "id": "acme~2", "attributes": {"name": "Two"}}},
        {"op": "remove", "ref": {"type": "accounts", "id": "acme~2"}},
    ]
    response = api.post("/api/operations", orjson.dumps({"atomic:operations": operations}),
                        headers={"Content-Type": ATOMIC, "Accept": ATOMIC})
    results = response.json["atomic:results"]
    assert [result.get("data", {}).get("id") for result in results] == ["acme~1", "acme~1", "acme~2", None]
    assert {item["id"]: item["attributes"]["name"] for item in api.get("/api/accounts").json["data"]} == {"acme~1": "Uno"}
    bad = [{"op": "remove", "ref": {"type": "accounts", "id": "acme"}}]
    error = api.post("/api/operations", orjson.dumps({"atomic:operations": bad}),
                     headers={"Content-Type": ATOMIC, "Accept": ATOMIC}, status=404).json["errors"][0]
    assert error["source"]["pointer"].startswith("/atomic:operations/0")


# -- relationships: a composite foreign key, an association table keyed by the composite key ------

def invoice(api, amount, account_id):
    linkage = None if account_id is None else {"type": "accounts", "id": account_id}
    return post(api, "invoices", {"attributes": {"amount": amount},
                                  "relationships": {"account": {"data": linkage}}}).json["data"]


def tag(api, label, *account_ids):
    linkage = [{"type": "accounts", "id": account_id} for account_id in account_ids]
    return post(api, "tags", {"attributes": {"label": label}, "relationships": {"accounts": {"data": linkage}}}).json["data"]


@pytest.fixture
def linked(api):
    """acme~1 (two invoices, tags red and blue), acme~2 (one invoice, tag red), beta~1 (nothing)."""
    for resource_id in ("acme~1", "acme~2", "beta~1"):
        account(api, resource_id, resource_id.upper())
    invoices = [invoice(api, 10, "acme~1")["id"], invoice(api, 20, "acme~1")["id"], invoice(api, 30, "acme~2")["id"]]
    tags = [tag(api, "red", "acme~1", "acme~2")["id"], tag(api, "blue", "acme~1")["id"]]
    return invoices, tags


def linkage_ids(data):
    return sorted(item["id"] for item in data) if isinstance(data, list) else data and data["id"]


def test_includes_run_both_ways_through_a_composite_foreign_key_and_an_association_table(api, linked):
    invoices, tags = linked
    with counted(api) as statements:
        document = api.get("/api/accounts", params={"include": "invoices,tags", "sort": "id"}).json
    assert len(statements) == 3, statements  # the accounts, then one statement per include path
    shown = {item["id"]: item["relationships"] for item in document["data"]}
    assert {key: linkage_ids(value["invoices"]["data"]) for key, value in shown.items()} == {
        "acme~1": sorted(invoices[:2]), "acme~2": [invoices[2]], "beta~1": []}
    assert {key: linkage_ids(value["tags"]["data"]) for key, value in shown.items()} == {
        "acme~1": sorted(tags), "acme~2": [tags[0]], "beta~1": []}
    assert shown["acme~1"]["invoices"]["meta"] == {"count": 2}
    assert sorted((item["type"], item["id"]) for item in document["included"]) == sorted(
        [("invoices", i) for i in invoices] + [("tags", t) for t in tags])
    document = api.get("/api/invoices", params={"include": "account.tags", "sort": "amount"}).json
    assert [item["relationships"]["account"]["data"] for item in document["data"]] == [
        {"type": "accounts", "id": "acme~1"}, {"type": "accounts", "id": "acme~1"}, {"type": "accounts", "id": "acme~2"}]
    assert sorted((item["type"], item["id"]) for item in document["included"]) == sorted(
        [("accounts", "acme~1"), ("accounts", "acme~2")] + [("tags", t) for t in tags])
    document = api.get(f"/api/tags/{tags[0]}", params={"include": "accounts.invoices"}).json
    assert linkage_ids(document["data"]["relationships"]["accounts"]["data"]) == ["acme~1", "acme~2"]
    assert sorted(item["id"] for item in document["included"] if item["type"] == "invoices") == sorted(invoices)
    # a page of the members of each parent: by number, or by cursors carrying a composite id's parts
    document = api.get("/api/accounts/acme~1", params={"include": "tags", "page[tags][size]": "1",
                                                       "page[tags][number]": "2"}).json
    assert len(document["data"]["relationships"]["tags"]["data"]) == 1
    assert document["data"]["relationships"]["tags"]["meta"] == {"count": 2}
    document = api.get(f"/api/tags/{tags[0]}", params={"include": "accounts", "page[accounts][size]": "1"}).json
    assert document["data"]["relationships"]["accounts"]["data"] == [{"type": "accounts", "id": "acme~1"}]
    paged = {"include": "accounts", "page[accounts][size]": "1"}
    first = api.get(f"/api/tags/{tags[0]}", params=paged, headers={"Accept": CURSOR}).json["data"]["relationships"]["accounts"]
    assert [member["id"] for member in first["data"]] == ["acme~1"]
    cursor = first["data"][0]["meta"]["page"]["cursor"]
    second = api.get(f"/api/tags/{tags[0]}", params={**paged, "page[accounts][after]": cursor}).json
    linkage = second["data"]["relationships"]["accounts"]
    assert [member["id"] for member in linkage["data"]] == ["acme~2"]
    assert linkage["links"]["next"] is None
    back = api.get(linkage["links"]["prev"], headers={"Accept": CURSOR}).json  # the related endpoint's cursor
    assert [item["id"] for item in back["data"]] == ["acme~1"]
    before = api.get(f"/api/tags/{tags[0]}", params={**paged, "page[accounts][before]": cursor}).json
    assert before["data"]["relationships"]["accounts"]["data"] == []
    error = api.get(f"/api/tags/{tags[0]}", params={**paged, "page[accounts][after]": "x"}, status=400).json["errors"][0]
    assert error["source"] == {"parameter": "page[accounts][after]"}


def test_related_and_relationship_endpoints_of_composite_ids(api, linked):
    invoices, tags = linked
    assert sorted(ids(api, "/api/accounts/acme~1/invoices")) == sorted(invoices[:2])
    assert ids(api, "/api/accounts/acme~1/relationships/tags", sort="label") == [tags[1], tags[0]]
    assert ids(api, f"/api/tags/{tags[0]}/accounts", sort="-id") == ["acme~2", "acme~1"]
    assert api.get(f"/api/invoices/{invoices[2]}/account").json["data"]["id"] == "acme~2"
    assert api.get(f"/api/invoices/{invoices[2]}/relationships/account").json["data"] == {"type": "accounts", "id": "acme~2"}
    seen, url = [], f"/api/tags/{tags[0]}/relationships/accounts?page[size]=1"
    while url:
        document = api.get(url, headers={"Accept": CURSOR}).json
        seen.extend(item["id"] for item in document["data"])
        url = document["links"].get("next")
    assert seen == ["acme~1", "acme~2"]
    # writes through the relationship endpoints: to-one replace and clear, to-many add, remove, replace
    link = f"/api/invoices/{invoices[2]}/relationships/account"
    patch(api, link, {"type": "accounts", "id": "beta~1"}, 204)
    assert api.get(link).json["data"] == {"type": "accounts", "id": "beta~1"}
    patch(api, link, None, 204)
    assert api.get(link).json["data"] is None
    tagged = "/api/accounts/beta~1/relationships/tags"
    api.post(tagged, orjson.dumps({"data": [{"type": "tags", "id": tags[1]}]}), headers={"Content-Type": MEDIA_TYPE}, status=(200, 204))
    assert ids(api, f"/api/tags/{tags[1]}/relationships/accounts", sort="id") == ["acme~1", "beta~1"]
    members = f"/api/tags/{tags[1]}/relationships/accounts"
    api.delete(members, orjson.dumps({"data": [{"type": "accounts", "id": "acme~1"}]}), headers={"Content-Type": MEDIA_TYPE},
               status=(200, 204))
    assert ids(api, members) == ["beta~1"]
    patch(api, members, [{"type": "accounts", "id": "acme~2"}, {"type": "accounts", "id": "acme~1"}], (200, 204))
    assert ids(api, members, sort="id") == ["acme~1", "acme~2"]
    error = patch(api, members, [{"type": "accounts", "id": "acme~9"}], 422).json["errors"][0]
    assert error["source"]["pointer"] == "/data/0"
    assert ids(api, members, sort="id") == ["acme~1", "acme~2"]


def test_a_resource_links_to_a_composite_id_when_it_is_created_or_updated(api, linked):
    made = invoice(api, 40, "beta~1")
    url = f"/api/invoices/{made['id']}"
    assert api.get(f"{url}/relationships/account").json["data"] == {"type": "accounts", "id": "beta~1"}
    patch(api, url, {"type": "invoices", "id": made["id"], "relationships": {"account": {"data": {"type": "accounts", "id": "acme~2"}}}})
    with api.app.registry["db.engine"].connect() as connection:
        assert connection.execute(text(f"SELECT tenant, account_number FROM ck_invoices WHERE id = {made['id']}")).one() == ("acme", 2)
    error = post(api, "invoices", {"attributes": {"amount": 1}, "relationships": {"account": {"data": {
        "type": "accounts", "id": "acme~3"}}}}, 422).json["errors"][0]
    assert error["source"] == {"pointer": "/data/relationships/account/data"}
    error = post(api, "invoices", {"attributes": {"amount": 1}, "relationships": {"account": {"data": {
        "type": "accounts", "id": "acme-3"}}}}, 422).json["errors"][0]
    assert error["source"] == {"pointer": "/data/relationships/account/data"}


def test_filters_through_relationships_compare_composite_ids(api, linked):
    invoices, tags = linked
    assert sorted(ids(api, "/api/invoices", **{"filter[account]": "acme~1"})) == sorted(invoices[:2])
    assert sorted(ids(api, "/api/invoices", **{"filter[account]": "acme~1,acme~2"})) == sorted(invoices)
    assert ids(api, "/api/invoices", **{"filter[account][ne]": "acme~1"}) == [invoices[2]]
    assert ids(api, "/api/invoices", **{"filter[account.name]": "ACME~2"}) == [invoices[2]]
    assert ids(api, "/api/tags", **{"filter[accounts]": "acme~2"}) == [tags[0]]
    assert ids(api, "/api/accounts", **{"filter[tags]": tags[1]}) == ["acme~1"]
    assert ids(api, "/api/accounts", **{"filter[invoices.amount][gte]": "20", "sort": "id"}) == ["acme~1", "acme~2"]
    assert ids(api, "/api/accounts", **{"filter[invoices][isnull]": "true"}) == ["beta~1"]
    assert ids(api, "/api/accounts", sort="-invoices.count") == ["acme~1", "acme~2", "beta~1"]
    error = api.get("/api/invoices", params={"filter[account]": "acme"}, status=400).json["errors"][0]
    assert error["source"] == {"parameter": "filter[account]"}


def test_an_item_with_relationships_has_an_entity_tag_that_follows_its_linkage(api, linked):
    tag_before = api.get("/api/accounts/acme~2").headers["ETag"]
    api.get("/api/accounts/acme~2", headers={"If-None-Match": tag_before}, status=304)
    invoice(api, 50, "acme~2")
    tag_after = api.get("/api/accounts/acme~2").headers["ETag"]
    assert tag_after != tag_before
    body = orjson.dumps({"data": {"type": "accounts", "id": "acme~2", "attributes": {"name": "Two"}}})
    headers = {"Content-Type": MEDIA_TYPE}
    api.patch("/api/accounts/acme~2", body, headers={**headers, "If-Match": tag_before}, status=412)
    answer = api.patch("/api/accounts/acme~2", body, headers={**headers, "If-Match": tag_after}, status=200)
    assert answer.headers["ETag"] == api.get("/api/accounts/acme~2").headers["ETag"] != tag_after
    api.delete("/api/accounts/acme~2", headers={"If-Match": tag_after}, status=412)
    api.delete("/api/accounts/acme~2", headers={"If-Match": answer.headers["ETag"]}, status=204)
    # a tag's entity tag holds the composite ids it links to
    _invoices, tags = linked
    red = f"/api/tags/{tags[1]}"
    tag_before = api.get(red).headers["ETag"]
    api.get(red, headers={"If-None-Match": tag_before}, status=304)
    api.post(f"{red}/relationships/accounts", orjson.dumps({"data": [{"type": "accounts", "id": "beta~1"}]}),
             headers={"Content-Type": MEDIA_TYPE}, status=(200, 204))
    assert api.get(red).headers["ETag"] != tag_before


def test_a_revalidation_of_composite_ids_is_answered_without_building(api, linked, monkeypatch):
    """The 304 that skips building (docs/etags.rst): composite ids in pages of linkage, cursors and
    paged includes are part of its key; a change is never answered 304 for the tag from before."""
    from jsonapi_pyramid.build import document

    _invoices, tags = linked
    built = []
    original = document.DocumentBuilder.__init__

    def counting(self, *args, **kwargs):
        built.append(1)
        original(self, *args, **kwargs)

    monkeypatch.setattr(document.DocumentBuilder, "__init__", counting)
    members = f"/api/tags/{tags[0]}/relationships/accounts"
    reads = [(members, {}), (f"{members}?page[size]=1", {"Accept": CURSOR}), (f"/api/tags/{tags[0]}/accounts", {}),
             ("/api/accounts/acme~1?include=invoices,tags&page[invoices][size]=1", {})]
    before = {}
    for url, headers in reads:
        etag = before[url] = api.get(url, headers=headers).headers["ETag"]
        api.get(url, headers={**headers, "If-None-Match": etag}, status=304)  # built, its tag kept
        built.clear()
        api.get(url, headers={**headers, "If-None-Match": etag}, status=304)
        assert not built, url
    api.delete(members, orjson.dumps({"data": [{"type": "accounts", "id": "acme~1"}]}), headers={"Content-Type": MEDIA_TYPE},
               status=(200, 204))
    for url, headers in reads:
        api.get(url, headers={**headers, "If-None-Match": before[url]}, status=200)


def test_metas_statistics_and_paths_ending_in_a_composite_id(api, linked):
    invoices, _tags = linked
    document = api.get("/api/accounts", params={"meta[accounts]": "invoicesCount", "sort": "id"}).json
    assert [item["meta"]["invoicesCount"] for item in document["data"]] == [2, 1, 0]
    stats = api.get("/api/invoices", params={"stats[total]": "count", "group": "account"}).json["meta"]["stats"]
    assert [(group["key"]["account"], group["stats"]["total"]["count"]) for group in stats["groups"]] == [
        ({"type": "accounts", "id": "acme~1"}, 2), ({"type": "accounts", "id": "acme~2"}, 1)]
    assert ids(api, "/api/invoices", sort="account.id,-amount") == [invoices[1], invoices[0], invoices[2]]
    assert ids(api, "/api/invoices", sort="-account.id,amount") == [invoices[2], invoices[0], invoices[1]]
    assert ids(api, "/api/invoices", **{"filter[account.id]": "acme~2"}) == [invoices[2]]
    assert sorted(ids(api, "/api/invoices", **{"filter[account.id][nin]": "acme~2,beta~1"})) == sorted(invoices[:2])


def test_a_hidden_composite_row_is_missing_everywhere(api, linked, served):
    invoices, tags = linked
    with served[1].begin() as connection:  # another writer links a hidden account to invoices[2] and tag red
        connection.execute(text("INSERT INTO ck_accounts (tenant, number, name) VALUES ('secret', 1, 'S')"))
        connection.execute(text(f"UPDATE ck_invoices SET tenant = 'secret', account_number = 1 WHERE id = {invoices[2]}"))
        connection.execute(text(f"INSERT INTO ck_account_tags VALUES ('secret', 1, {tags[0]})"))
    api.get("/api/accounts/secret~1", status=404)
    assert "secret~1" not in ids(api)
    assert ids(api, **{"filter[id]": "secret~1,acme~1"}) == ["acme~1"]
    assert api.get(f"/api/invoices/{invoices[2]}/relationships/account").json["data"] is None
    assert ids(api, f"/api/tags/{tags[0]}/accounts", sort="id") == ["acme~1", "acme~2"]
    document = api.get(f"/api/tags/{tags[0]}", params={"include": "accounts"}).json
    assert linkage_ids(document["data"]["relationships"]["accounts"]["data"]) == ["acme~1", "acme~2"]
    document = api.get("/api/invoices", params={"include": "account", "filter[id]": invoices[2]}).json
    assert document["data"][0]["relationships"]["account"]["data"] is None and document.get("included", []) == []
    assert ids(api, "/api/invoices", **{"filter[account][isnull]": "true"}) == [invoices[2]]
    error = patch(api, f"/api/invoices/{invoices[0]}/relationships/account", {"type": "accounts", "id": "secret~1"}, 422)
    assert error.json["errors"][0]["source"]["pointer"] == "/data"
    tag_before = api.get(f"/api/tags/{tags[0]}").headers["ETag"]
    with served[1].begin() as connection:  # a hidden member leaving changes nothing the caller sees
        connection.execute(text("DELETE FROM ck_account_tags WHERE tenant = 'secret'"))
    assert api.get(f"/api/tags/{tags[0]}").headers["ETag"] == tag_before


def test_atomic_operations_link_by_local_and_composite_ids(api, linked):
    invoices, tags = linked
    operations = [
        {"op": "add", "data": {"type": "accounts", "id": "gamma~1", "attributes": {"name": "G"}}},
        {"op": "add", "data": {"type": "invoices", "lid": "i", "attributes": {"amount": 70},
                               "relationships": {"account": {"data": {"type": "accounts", "id": "gamma~1"}}}}},
        {"op": "add", "ref": {"type": "tags", "id": tags[1], "relationship": "accounts"},
         "data": [{"type": "accounts", "id": "gamma~1"}]},
        {"op": "update", "ref": {"type": "invoices", "id": invoices[0], "relationship": "account"},
         "data": {"type": "accounts", "id": "gamma~1"}},
    ]
    response = api.post("/api/operations", orjson.dumps({"atomic:operations": operations}),
                        headers={"Content-Type": ATOMIC, "Accept": ATOMIC})
    assert response.json["atomic:results"][1]["data"]["relationships"]["account"]["links"]["related"].endswith("/account")
    assert sorted(ids(api, "/api/accounts/gamma~1/invoices")) == sorted([invoices[0], response.json["atomic:results"][1]["data"]["id"]])
    assert ids(api, f"/api/tags/{tags[1]}/accounts", sort="id") == ["acme~1", "gamma~1"]


def test_the_openapi_document_is_valid_and_its_examples_of_composite_ids_are_accepted(api):
    document = api.get("/api/openapi.json").json
    validate(document)
    account(api, "a~1")
    made = invoice(api, 1, None)
    url = "/api/invoices/{id}/relationships/account"
    example = document["paths"][url]["patch"]["requestBody"]["content"][MEDIA_TYPE]["example"]
    assert example == {"data": {"type": "accounts", "id": "a~1"}}
    patch(api, url.format(id=made["id"]), example["data"], 204)
    assert api.get(url.format(id=made["id"])).json["data"] == example["data"]


# -- the conformance kit ---------------------------------------------------------------------------

test_conformance = conformance(lambda: make_app("sqlite://"))


@pytest.fixture
def jsonapi_client(api):
    return api


@pytest.fixture
def jsonapi_factories():
    return {"slots": lambda kit, n: {"id": f"{uuid.uuid4()}~{n}", "attributes": {"label": f"Slot {n}"}},
            "accounts": lambda kit, n: {"id": f"kit {n}/{uuid.uuid4().hex[:6]}~{n}".replace("/", "%2F"),
                                        "attributes": {"name": f"Account {n}"}},
            "invoices": lambda kit, n: {"attributes": {"amount": n}, "relationships": {"account": {"data": kit.create("accounts")}}},
            "tags": lambda kit, n: {"attributes": {"label": f"Tag {n}"}}}


def test_a_composite_foreign_key_include_reads_its_targets_by_key(api, linked, patch_frozen):
    """``load.held_keys`` through a two-column foreign key: the accounts read by the (tenant, number)
    the invoices hold, in a statement without the invoices' table; the documents are the joined loader's."""
    from jsonapi_pyramid.contract import get_registry
    from tests.functional.test_held_keys import joined_documents

    invoices, _tags = linked
    invoice(api, 40, None)  # a NULL key: null linkage
    relationship = get_registry(api.app.registry).get("invoices").relationships["account"]
    assert relationship.held_target_keys == ("tenant", "account_number")
    requests = [("/api/accounts?include=invoices.account.tags&sort=id", {}),
                ("/api/tags?include=accounts.invoices.account&sort=id", {}),
                ("/api/accounts/acme~1?include=invoices.account&page[invoices][size]=1", {})]
    requests += [(f"/api/invoices/{invoice_id}?include=account", {}) for invoice_id in invoices]
    with counted(api) as statements:
        api.get(requests[0][0])
    assert len(statements) == 4 and "ck_invoices" not in statements[2], statements
    for (url, _kwargs), (held, joined) in zip(requests, joined_documents(api, get_registry(api.app.registry), patch_frozen,
                                                                          [("invoices", "account")], requests), strict=True):
        assert held == joined, url
