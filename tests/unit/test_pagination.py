"""Cursor pagination pieces: cursor signing and decoding, and keyset SQL checked against a
brute-force ordering on an in-memory SQLite table (random rows, NULLs, mixed directions)."""
from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import Column, Integer, MetaData, String, Table, create_engine, insert, select

from jsonapi_pyramid.errors import BadRequest
from jsonapi_pyramid.pagination import CursorCodec, OrderKey, keyset_criterion, profile_requested


class FakeRequest:
    def __init__(self, accept):
        self.headers = {"Accept": accept} if accept is not None else {}


# -- cursors -------------------------------------------------------------------------------------

@pytest.mark.parametrize("values", [
    (1,), ("text", 5), (None, 7), (True, False, 3), (1.5, 2), (Decimal("1.10"), 1),
    (dt.datetime(2025, 1, 2, 3, 4, 5, 6), 9), (dt.date(2025, 1, 2), 1), (dt.time(10, 11), 1),
    (uuid.UUID("12345678-1234-5678-1234-567812345678"), 1), ("é\u2603\U0001F600", 1),
])
def test_cursor_round_trip(values):
    codec = CursorCodec("secret", "/api/articles\n-createdAt\n")
    cursor = codec.encode(values)
    assert codec.decode(cursor, "page[after]", len(values)) == (tuple(values), False)
    assert codec.decode(codec.encode(values, inclusive=True), "page[after]", len(values)) == (tuple(values), True)
    assert all(c.isalnum() or c in "-_." for c in cursor)  # URL-safe


def test_cursor_is_bound_to_secret_and_scope():
    cursor = CursorCodec("secret", "scope").encode((1,))
    for codec in (CursorCodec("other", "scope"), CursorCodec("secret", "scope2")):
        with pytest.raises(BadRequest) as caught:
            codec.decode(cursor, "page[before]", 1)
        assert caught.value.errors[0]["source"] == {"parameter": "page[before]"}
    with pytest.raises(BadRequest):
        CursorCodec("secret", "scope").decode(cursor, "page[after]", 2)  # another number of keys


@given(st.text(max_size=80))
def test_arbitrary_text_is_never_a_cursor(text):
    with pytest.raises(BadRequest):
        CursorCodec("secret", "scope").decode(text, "page[after]", 1)


@pytest.mark.parametrize("accept,expected", [
    ('application/vnd.api+json; profile="http://jsonapi.org/profiles/ethanresnick/cursor-pagination/"', True),
    ('application/vnd.api+json; profile="https://jsonapi.org/profiles/ethanresnick/cursor-pagination"', True),
    ('application/vnd.api+json;profile="https://example.com/a http://jsonapi.org/profiles/ethanresnick/cursor-pagination/"', True),
    ('*/*, application/vnd.api+json; profile="http://jsonapi.org/profiles/ethanresnick/cursor-pagination/"', True),
    ('application/json; profile="http://jsonapi.org/profiles/ethanresnick/cursor-pagination/"', False),
    ('application/vnd.api+json; profile="https://example.com/other"', False),
    ("application/vnd.api+json", False),
    (None, False),
])
def test_profile_requested(accept, expected):
    assert profile_requested(FakeRequest(accept)) is expected


# -- keyset SQL against brute force ------------------------------------------------------------------

metadata = MetaData()
rows_table = Table("rows", metadata, Column("id", Integer, primary_key=True), Column("a", Integer, nullable=True),
                   Column("b", String(5), nullable=True), Column("c", Integer, nullable=False))


@pytest.fixture(scope="module")
def engine():
    engine = create_engine("sqlite://")
    metadata.create_all(engine)
    yield engine
    engine.dispose()


def _python_order(rows, spec):
    """Sort rows (dicts) like ORDER BY with NULLs last in both directions, id last."""
    def key(row):
        parts = []
        for name, descending in spec:
            value = row[name]
            if value is None:
                parts.append((1, 0))
            else:
                parts.append((0, _Reverse(value) if descending else value))
        parts.append((0, row["id"]))
        return parts
    return sorted(rows, key=key)


class _Reverse:
    def __init__(self, value):
        self.value = value

    def __lt__(self, other):
        return self.value > other.value

    def __eq__(self, other):
        return self.value == other.value


_ROWS = st.lists(st.tuples(st.one_of(st.none(), st.integers(0, 3)), st.one_of(st.none(), st.sampled_from("xyz")),
                           st.integers(0, 2)), min_size=1, max_size=25)
_SPEC = st.lists(st.tuples(st.sampled_from("abc"), st.booleans()), max_size=3, unique_by=lambda t: t[0])


@settings(max_examples=150, deadline=None)
@given(rows=_ROWS, spec=_SPEC, data=st.data())
def test_keyset_matches_brute_force(engine, rows, spec, data):
    with engine.begin() as connection:
        connection.execute(rows_table.delete())
        connection.execute(insert(rows_table), [{"id": i + 1, "a": a, "b": b, "c": c} for i, (a, b, c) in enumerate(rows)])
    table_rows = [{"id": i + 1, "a": a, "b": b, "c": c} for i, (a, b, c) in enumerate(rows)]
    ordered = _python_order(table_rows, spec)
    keys = [OrderKey(rows_table.c[name], descending, rows_table.c[name].nullable) for name, descending in spec]
    keys.append(OrderKey(rows_table.c.id))
    index = data.draw(st.integers(0, len(ordered) - 1))
    position = tuple(ordered[index][name] for name, _ in spec) + (ordered[index]["id"],)
    with engine.connect() as connection:
        forward = select(rows_table.c.id).order_by(*(key.clause() for key in keys))
        assert [r for (r,) in connection.execute(forward)] == [row["id"] for row in ordered]
        for after, inclusive, expected in (
            (True, False, ordered[index + 1:]), (True, True, ordered[index:]),
            (False, False, ordered[:index]), (False, True, ordered[: index + 1]),
        ):
            criterion = keyset_criterion(keys, position, after=after, inclusive=inclusive)
            statement = select(rows_table.c.id).where(criterion).order_by(*(key.clause(reverse=not after) for key in keys))
            found = [r for (r,) in connection.execute(statement)]
            want = [row["id"] for row in expected]
            assert found == (want if after else want[::-1]), (after, inclusive)


def test_cursor_secret_setting():
    from jsonapi_pyramid import parse_settings

    assert parse_settings({"jsonapi.cursor_secret": "shared"})["cursor_secret"] == "shared"
    generated = {parse_settings({})["cursor_secret"] for _ in range(2)}
    assert len(generated) == 2 and all(len(secret) >= 32 for secret in generated)
