"""Query parsing details that need no database: page values, filter values by type."""
from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy import Boolean, Date, DateTime, Integer, Numeric, String, Uuid

from jsonapi_pyramid.errors import BadRequest
from jsonapi_pyramid.parse.filter_terms import parse_timestamp as _parse_timestamp
from jsonapi_pyramid.parse.filter_terms import parse_value as _parse_value
from jsonapi_pyramid.parse.query import _parse_page

SETTINGS = {"default_page_size": 20, "max_page_size": 100}


def test_page_defaults_and_values():
    page = _parse_page({}, SETTINGS)
    assert (page.number, page.size, page.cursor) == (1, 20, False)
    page = _parse_page({"number": ("page[number]", "3"), "size": ("page[size]", "007")}, SETTINGS)
    assert (page.number, page.size) == (3, 7)
    assert _parse_page({}, SETTINGS, profile=True).cursor
    assert not _parse_page({"number": ("page[number]", "1")}, SETTINGS, profile=True).cursor


def test_range_requests_default_to_the_maximum_size():
    page = _parse_page({"after": ("page[after]", "a"), "before": ("page[before]", "b")}, SETTINGS)
    assert page.size == 100 and page.cursor


@pytest.mark.parametrize("raw", ["0", "-1", "", "x", "1.0", "²", "١", "１", " 1", "1 ", "1000000000"])
def test_bad_page_numbers(raw):
    with pytest.raises(BadRequest) as caught:
        _parse_page({"number": ("page[number]", raw)}, SETTINGS)
    assert caught.value.errors[0]["source"] == {"parameter": "page[number]"}


def test_max_size_is_the_profiles_error():
    with pytest.raises(BadRequest) as caught:
        _parse_page({"size": ("page[size]", "101")}, SETTINGS)
    error = caught.value.errors[0]
    assert error["meta"] == {"page": {"maxSize": 100}}
    assert error["links"]["type"].endswith("/cursor-pagination/max-size-exceeded")


@pytest.mark.parametrize("column_type,raw,expected", [
    (Integer(), "-12", -12),
    (Boolean(), "TRUE", True),
    (Boolean(), "0", False),
    (Numeric(), "1.50", __import__("decimal").Decimal("1.50")),
    (Date(), "2025-02-03", dt.date(2025, 2, 3)),
    (DateTime(), "2025-02-03T04:05:06Z", dt.datetime(2025, 2, 3, 4, 5, 6)),
    (DateTime(), "2025-02-03T06:05:06+02:00", dt.datetime(2025, 2, 3, 4, 5, 6)),
    (DateTime(), "2025-02-03", dt.datetime(2025, 2, 3)),
    (String(), "anything, really", "anything, really"),
])
def test_values_by_type(column_type, raw, expected):
    assert _parse_value(raw, column_type, None, "filter[x]") == expected


@pytest.mark.parametrize("column_type,raw", [
    (Integer(), "1.5"), (Integer(), "١"), (Integer(), "9" * 19), (Boolean(), "yes"), (Numeric(), "NaN"),
    (Numeric(), "x"), (Date(), "2025-02-30"), (DateTime(), "soon"), (DateTime(), "0001-01-01T00:00:00+01:00"),
    (Uuid(), "not-a-uuid"),
])
def test_bad_values_by_type(column_type, raw):
    with pytest.raises(BadRequest) as caught:
        _parse_value(raw, column_type, None, "filter[x][gt]")
    assert caught.value.errors[0]["source"] == {"parameter": "filter[x][gt]"}


def test_timestamps_are_naive_utc():
    assert _parse_timestamp("2025-01-01T00:30:00-01:00") == dt.datetime(2025, 1, 1, 1, 30)
