"""A database whose migrations were not run: a request on a table that does not exist is a 500,
and the log names the table and says to run the migrations (it logged a bare traceback). On
every backend: the catalogue's app (examples/catalog) over the blog's database, which has none
of the catalogue's tables."""
from __future__ import annotations

import logging

import pytest
import webtest

import catalog
from jsonapi_pyramid import errors


@pytest.fixture
def unmigrated(database_url, db):
    app = catalog.main({}, **{"sqlalchemy.url": database_url, "retry.attempts": "1"})
    yield webtest.TestApp(app, extra_environ={"HTTP_HOST": "example.test"})
    app.registry["db.engine"].dispose()


def test_a_missing_table_is_a_500_whose_log_says_to_run_the_migrations(unmigrated, caplog):
    with caplog.at_level(logging.ERROR, logger="jsonapi_pyramid"):
        response = unmigrated.get("/api/publishers", status=500)
    error = response.json["errors"][0]
    assert error["detail"] == "An unexpected error occurred. Report its id to the operators."
    assert "exist" not in response.text and "table" not in response.text  # the client learns nothing of the schema
    hints = [record for record in caplog.records if "does not exist" in record.getMessage()]
    assert len(hints) == 1, [record.getMessage() for record in caplog.records]
    message = hints[0].getMessage()
    assert "the table publishers does not exist" in message and error["id"] in message
    assert "run the database migrations (alembic upgrade head)" in message
    assert hints[0].exc_info  # the traceback is still there


@pytest.mark.parametrize("message,named", [
    ("no such table: publishers", "the table publishers"),
    ('relation "publishers" does not exist\nLINE 1: SELECT ...', "the table publishers"),
    ("no such column: books.isbn", "the column books.isbn"),
    ("table books has no column named isbn", "the column books.isbn"),
    ('column "isbn" of relation "books" does not exist', "the column books.isbn"),
    ("column books.isbn does not exist", "the column books.isbn"),
    ("too many FROM clause terms, max: 200", None),
])
def test_what_sqlite_and_postgresql_say_of_a_missing_table_or_column(message, named):
    assert errors._missing_from_schema(Exception(message)) == named
