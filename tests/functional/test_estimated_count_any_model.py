"""``meta[<type>]=estimatedCount`` past ``jsonapi.exact_count_limit`` (here 3), with models of the
test's own (a station and its readings, some hidden by ``visible=``) on both backends: on
PostgreSQL one bounded count and one ``EXPLAIN`` (the planner's estimate, ``estimatedCountExact``
false); on SQLite the exact count, one statement. Under the limit, exact everywhere."""
from __future__ import annotations

import contextlib

import pytest
import webtest
from pyramid.config import Configurator
from pyramid.exceptions import ConfigurationError
from sqlalchemy import ForeignKey, String, create_engine, event, false, text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from jsonapi_pyramid import RelationshipsCollection, ToManyRelationship, ToOneRelationship, Transformer
from tests.conftest import BACKENDS, _postgresql_database, _sqlite_database


class Base(DeclarativeBase):
    pass


class Station(Base):
    __tablename__ = "estimate_stations"
    __jsonapi_type__ = "stations"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(40))
    readings: Mapped[list[Reading]] = relationship(back_populates="station")

    @classmethod
    def transformer(cls):
        return StationTransformer()

    @classmethod
    def relationships(cls):
        return RelationshipsCollection(ToManyRelationship.create("readings", Reading, mapped_by="station"))


class Reading(Base):
    __tablename__ = "estimate_readings"
    __jsonapi_type__ = "readings"
    id: Mapped[int] = mapped_column(primary_key=True)
    value: Mapped[int]
    hidden: Mapped[bool] = mapped_column(default=False)
    station_id: Mapped[int] = mapped_column(ForeignKey("estimate_stations.id"))
    station: Mapped[Station] = relationship(back_populates="readings")

    @classmethod
    def transformer(cls):
        return ReadingTransformer()

    @classmethod
    def relationships(cls):
        return RelationshipsCollection(ToOneRelationship.create("station", Station))


class StationTransformer(Transformer):
    attributes = ("name",)


class ReadingTransformer(Transformer):
    attributes = ("value",)


HIDDEN = Reading.hidden == false()
LIMIT = 3
READINGS = 60  # station 1: ids 1-50 (every fifth hidden); station 2: ids 51-60, all visible


def _app(url, limit=LIMIT):
    with Configurator(settings={"sqlalchemy.url": url, "jsonapi.exact_count_limit": str(limit)}) as config:
        config.include("jsonapi_pyramid.db")
        config.include("jsonapi_pyramid")
        config.add_jsonapi_resource(Station)
        config.add_jsonapi_resource(Reading, visible=lambda request: HIDDEN)
    return config.make_wsgi_app()


@pytest.fixture(scope="module", params=BACKENDS)
def readings(request, tmp_path_factory):
    factory = _sqlite_database(tmp_path_factory) if request.param == "sqlite" else _postgresql_database("estimates")
    with factory as url:
        engine = create_engine(url)
        Base.metadata.create_all(engine)
        with engine.begin() as connection:
            connection.execute(text("INSERT INTO estimate_stations (id, name) VALUES (1, 'north'), (2, 'south')"))
            for number in range(1, READINGS + 1):
                connection.execute(text("INSERT INTO estimate_readings (id, value, hidden, station_id) "
                                        "VALUES (:id, :value, :hidden, :station)"),
                                   {"id": number, "value": number % 7, "hidden": number <= 50 and number % 5 == 0,
                                    "station": 1 if number <= 50 else 2})
        if request.param == "postgresql":
            with engine.connect() as connection:  # statistics for the planner, as autovacuum would make
                connection.execute(text("ANALYZE estimate_readings"))
                connection.commit()
        engine.dispose()
        app = _app(url)
        yield webtest.TestApp(app, extra_environ={"HTTP_HOST": "example.test"}), app, request.param, url
        app.registry["db.engine"].dispose()


@contextlib.contextmanager
def statements_of(app):
    seen: list[str] = []

    def record(conn, cursor, statement, parameters, context, executemany):
        if not statement.lstrip().upper().startswith(("SAVEPOINT", "RELEASE", "ROLLBACK", "COMMIT", "BEGIN")):
            seen.append(statement)

    engine = app.registry["db.engine"]
    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)


def test_over_the_limit_postgresql_estimates_and_sqlite_counts(readings):
    client, app, backend, _url = readings
    with statements_of(app) as plain:
        client.get("/api/readings")
    with statements_of(app) as estimated:
        meta = client.get("/api/readings?meta[readings]=estimatedCount").json["meta"]
    visible = READINGS - 10
    if backend == "postgresql":
        assert meta["estimatedCountExact"] is False
        assert isinstance(meta["estimatedCount"], int) and meta["estimatedCount"] > LIMIT
        assert len(estimated) == len(plain) + 2
        assert estimated[-1].startswith("EXPLAIN (FORMAT JSON) ")
        assert estimated[-2].startswith("SELECT count(*)") and "LIMIT" in estimated[-2]  # LIMIT 4, bound
    else:
        assert meta == {"estimatedCount": visible, "estimatedCountExact": True}
        assert len(estimated) == len(plain) + 1
    total = client.get("/api/readings?meta[readings]=totalCount,estimatedCount").json["meta"]
    assert total == {"totalCount": visible, "estimatedCount": visible, "estimatedCountExact": True}


def test_a_filtered_set_within_the_limit_is_exact_in_one_statement(readings):
    client, app, _backend, _url = readings
    with statements_of(app) as plain:
        client.get("/api/readings?filter[value]=3&filter[station]=2")
    with statements_of(app) as estimated:
        meta = client.get("/api/readings?filter[value]=3&filter[station]=2&meta[readings]=estimatedCount").json["meta"]
    assert meta == {"estimatedCount": 2, "estimatedCountExact": True}  # 52 and 59
    assert len(estimated) == len(plain) + 1


def test_hidden_rows_count_neither_exactly_nor_in_the_estimate(readings):
    client, _app_over, backend, url = readings
    # station 1: 40 visible of 50; the limit lifted so the count is exact on both backends
    exact = webtest.TestApp(_app(url, limit=100), extra_environ={"HTTP_HOST": "example.test"})
    try:
        meta = exact.get("/api/stations/1/readings?meta[readings]=estimatedCount").json["meta"]
        linkage = exact.get("/api/stations/1/relationships/readings?meta[readings]=estimatedCount").json["meta"]
    finally:
        exact.app.registry["db.engine"].dispose()
    assert meta == linkage == {"estimatedCount": 40, "estimatedCountExact": True}
    over = client.get("/api/stations/1/relationships/readings?meta[readings]=estimatedCount").json["meta"]
    assert over["estimatedCountExact"] is (backend != "postgresql")
    if backend != "postgresql":
        assert over["estimatedCount"] == 40


@pytest.mark.parametrize("value", ["0", "-5", "many"])
def test_the_limit_is_a_positive_integer_checked_at_start_up(value, tmp_path):
    with pytest.raises(ConfigurationError, match="jsonapi.exact_count_limit must be"):
        _app(f"sqlite:///{tmp_path}/never.sqlite", limit=value)
