"""``meta[x]=totalCount`` against ``meta[x]=estimatedCount`` over a large PostgreSQL table,
in-process (no HTTP): ``python bench/estimated_count.py [--rows 1000000] [--requests 7]``.

Makes a fresh database on the server of ``BENCH_PG_URL`` (default
postgresql+psycopg://postgres@127.0.0.1:5432/postgres) with one table of ``--rows`` rows
(``generate_series``; one row in 50 hidden by the resource's ``visible=``), ``ANALYZE``s it,
serves a tiny application with the library over it through WebTest, and prints per request the
median time of ``--requests`` requests (after one warm-up request), the statements one request
runs, and the counts it answered: a page of 20 alone, with ``totalCount`` and with
``estimatedCount`` (``jsonapi.exact_count_limit`` at its default, 10 000), without a filter, with
a filter that keeps a tenth of the rows and with one that keeps fewer than the limit. The database
is dropped afterwards, whatever happens.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import time
import uuid
from collections.abc import Iterator
from typing import Any

import webtest
from pyramid.config import Configurator
from sqlalchemy import BigInteger, Integer, create_engine, event, false, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from jsonapi_pyramid import RelationshipsCollection, Transformer

SERVER = os.environ.get("BENCH_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
PAGE = "/api/events?page[size]=20"
FILTERS = {
    "no filter": "",
    "filter[kind]=3 (a tenth)": "&filter[kind]=3",
    "filter[id][lt]=5000 (under the limit)": "&filter[id][lt]=5000",
}


class Base(DeclarativeBase):
    pass


class Event(Base):
    __tablename__ = "bench_events"
    __jsonapi_type__ = "events"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    kind: Mapped[int] = mapped_column(Integer, index=True)
    score: Mapped[int]
    hidden: Mapped[bool]

    @classmethod
    def transformer(cls) -> Transformer:
        return EventTransformer()

    @classmethod
    def relationships(cls) -> RelationshipsCollection:
        return RelationshipsCollection()


class EventTransformer(Transformer):
    attributes = ("kind", "score")


VISIBLE = Event.hidden == false()


@contextlib.contextmanager
def database(rows: int) -> Iterator[str]:
    server = make_url(SERVER)
    admin = create_engine(server.set(database="postgres"), isolation_level="AUTOCOMMIT")
    name = f"jsonapi_bench_counts_{uuid.uuid4().hex[:8]}"
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    url = server.set(database=name).render_as_string(hide_password=False)
    try:
        engine = create_engine(url)
        Base.metadata.create_all(engine)
        started = time.perf_counter()
        with engine.begin() as connection:
            connection.execute(text("INSERT INTO bench_events (id, kind, score, hidden) "
                                    "SELECT g, g % 10, (g::bigint * 7919) % 1000, g % 50 = 0 FROM generate_series(1, :rows) AS g"),
                               {"rows": rows})
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.execute(text("VACUUM ANALYZE bench_events"))
        print(f"{rows:,} rows made and analysed in {time.perf_counter() - started:.1f} s (database {name})")
        engine.dispose()
        yield url
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
        print(f"database {name} dropped")


def application(url: str) -> Any:
    with Configurator(settings={"sqlalchemy.url": url}) as config:
        config.include("jsonapi_pyramid.db")
        config.include("jsonapi_pyramid")
        config.add_jsonapi_resource(Event, visible=lambda request: VISIBLE)
    return config.make_wsgi_app()


def measure(client: webtest.TestApp, path: str, requests: int) -> tuple[float, int, dict[str, Any]]:
    """(median ms, statements of one request, the top-level meta) of ``path``."""
    seen: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen.append(statement)

    engine = client.app.registry["db.engine"]
    event.listen(engine, "before_cursor_execute", record)
    try:
        meta = client.get(path).json.get("meta", {})  # warm-up: statements built, the plan kept
    finally:
        event.remove(engine, "before_cursor_execute", record)
    times = []
    for _ in range(requests):
        started = time.perf_counter()
        client.get(path)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), len(seen), meta


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--requests", type=int, default=7)
    options = parser.parse_args()
    with database(options.rows) as url:
        app = application(url)
        client = webtest.TestApp(app, extra_environ={"HTTP_HOST": "bench.test"})
        try:
            print("| filter | meta | ms per request (median) | statements | meta answered |")
            print("|---|---|---|---|---|")
            for label, query in FILTERS.items():
                for meta in ("", "totalCount", "estimatedCount"):
                    path = PAGE + query + (f"&meta[events]={meta}" if meta else "")
                    ms, statements, answered = measure(client, path, options.requests)
                    print(f"| {label} | {meta or '-'} | {ms:.1f} | {statements} | {answered or '-'} |")
        finally:
            app.registry["db.engine"].dispose()


if __name__ == "__main__":
    main()
