"""Lists of ids bound as one parameter (``idlists``): ``= ANY(:ids)`` on PostgreSQL, ``IN (SELECT
value FROM json_each(:ids))`` on SQLite, SQLAlchemy's expanding ``IN`` elsewhere. The SQL of an
include does not depend on the number of parents, the index is still used, and a list longer than
a statement's bound parameters (SQLite: 32,766; PostgreSQL: 65,535) works."""
from __future__ import annotations

import contextlib
import datetime as dt
import sqlite3

import webtest
from sqlalchemy import event, insert, select
from sqlalchemy.dialects import mysql

from jsonapi_blog.models import Comment, User
from jsonapi_pyramid.load.idlists import bind_ids, ids_in


def test_include_statements_keep_one_sql_text_whatever_the_number_of_parents(api, blog, make_articles, count_statements):
    """One SQL text per include path for any number of parents, and one more for a single parent,
    whose id is compared (``= :jsonapi_parent_id``), not listed: PostgreSQL keeps one generic plan
    of it, where a short bound list made it plan every run (``includes._include_base``)."""
    make_articles(12, blog["bob"])
    texts = []
    for size in ("2", "3", "12", "1"):
        with count_statements() as statements:
            api.get("/api/articles", params={"page[size]": size, "include": "comments,tags"})
        texts.append(statements)
    assert [len(statements) for statements in texts] == [3, 3, 3, 3]  # the page and one statement per include path
    if api.app.registry["db.engine"].dialect.name in ("sqlite", "postgresql"):
        assert texts[0][1:] == texts[1][1:] == texts[2][1:]  # one SQL text per include path, whatever the count
        assert all("jsonapi_parent_ids" in text for text in texts[0][1:])
        assert all("jsonapi_parent_ids" not in text and "jsonapi_parent_id" in text for text in texts[3][1:])
        # comments have a visibility rule (their article's): still one parent's are read by their key
        assert "comments.article_id = " in texts[3][1] and "articles_1" not in texts[3][1]


def test_a_short_id_list_is_padded_to_the_length_postgresql_plans_for():
    """PostgreSQL's generic plan assumes a bound array of ten elements: a shorter list is padded
    with its last id (``= ANY`` is unchanged by a repeat), so the prepared statement's generic plan
    is used instead of a new plan per run. Other forms are left as given."""
    from sqlalchemy.dialects import postgresql, sqlite

    column = Comment.__table__.c.article_id
    assert bind_ids(column, [3, 1], postgresql.dialect()) == [3, 1] + [1] * 8
    assert bind_ids(column, list(range(12)), postgresql.dialect()) == list(range(12))
    assert bind_ids(column, [], postgresql.dialect()) == []
    assert bind_ids(column, [3, 1], sqlite.dialect()) == "[3,1]"


@contextlib.contextmanager
def sqlite_variable_limit(engine, limit):
    """SQLite's own default limit of bound variables (32,766), which Debian's Python raises to 250,000."""
    def checkout(dbapi_connection, record, proxy):
        dbapi_connection.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, limit)

    event.listen(engine, "checkout", checkout)
    try:
        yield
    finally:
        event.remove(engine, "checkout", checkout)
        engine.dispose()  # no pooled connection keeps the lower limit


def test_an_include_over_more_parents_than_a_statement_can_bind(database_url, blog, db, backend):
    """Old code: SQLite refused the comments' authors ("too many SQL variables"), PostgreSQL
    ("number of parameters must be between 0 and 65535"). Includes are paged, so this takes an
    application whose include pages hold them all."""
    from jsonapi_blog import main
    from tests.conftest import APP_SETTINGS

    article, bob = blog["hello"], blog["bob"]
    many = 33_000 if backend == "sqlite" else 66_000
    now = dt.datetime(2026, 1, 1)
    db.execute(insert(Comment), [{"body": "c", "article_id": article.id, "user_id": bob.id, "created_at": now}] * many)
    db.commit()
    bound = str(many + 100)
    wsgi_app = main({}, **{**APP_SETTINGS, "sqlalchemy.url": database_url, "jsonapi.max_page_size": bound,
                           "jsonapi.max_include_size": bound, "jsonapi.default_include_size": bound})
    engine = wsgi_app.registry["db.engine"]
    app = webtest.TestApp(wsgi_app, extra_environ={"HTTP_HOST": "example.test"})  # no schema check of 66,000 resources
    limit = sqlite_variable_limit(engine, 32_766) if backend == "sqlite" else contextlib.nullcontext()
    with limit:
        document = app.get(f"/api/articles/{article.id}", params={"include": "comments.author"}).json
    engine.dispose()
    comments = document["data"]["relationships"]["comments"]["data"]
    assert len(comments) == many + len([c for c in blog["comments"] if c.article_id == article.id])
    authors = {item["id"] for item in document["included"] if item["type"] == "users"}
    assert str(bob.id) in authors
    assert len(document["included"]) == len(comments) + len(authors)


def _plan(connection, statement, parameters) -> str:
    compiled = statement.compile(connection.engine)
    sql, values = str(compiled), compiled.construct_params(parameters)
    if connection.dialect.name == "sqlite":
        positional = tuple(values[name] for name in compiled.positiontup)
        return " ".join(str(row[-1]) for row in connection.exec_driver_sql("EXPLAIN QUERY PLAN " + sql, positional))
    connection.exec_driver_sql("SET LOCAL enable_seqscan = off")  # a tiny table: can the index serve at all?
    return " ".join(row[0] for row in connection.exec_driver_sql("EXPLAIN " + sql, values))


def test_the_bound_list_is_searched_by_the_index(engine, blog):
    dialect = engine.dialect
    by_key = select(User.id).where(ids_in(User.id, "ids", dialect))
    by_foreign_key = select(Comment.id).where(ids_in(Comment.user_id, "ids", dialect))
    ids = bind_ids(User.__table__.c.id, [blog["bob"].id, blog["alice"].id], dialect)
    with engine.begin() as connection:
        key_plan = _plan(connection, by_key, {"ids": ids})
        foreign_key_plan = _plan(connection, by_foreign_key, {"ids": ids})
    if dialect.name == "sqlite":
        assert "SEARCH users USING INTEGER PRIMARY KEY (rowid=?)" in key_plan
        assert "SEARCH comments USING" in foreign_key_plan and "(user_id=?)" in foreign_key_plan
    else:
        assert "Index" in key_plan and "= ANY" in key_plan and "Seq Scan" not in key_plan
        assert "Index" in foreign_key_plan and "Seq Scan" not in foreign_key_plan


def test_other_dialects_keep_the_expanding_in():
    dialect = mysql.dialect()
    criterion = ids_in(User.id, "ids", dialect)
    assert "POSTCOMPILE_ids" in str(criterion.compile(dialect=dialect))
    assert bind_ids(User.__table__.c.id, (3, 1), dialect) == [3, 1]

