"""ISO 8601 durations of ``Interval`` columns (``jsonapi_pyramid.durations``): what is shown parses
back to the same ``timedelta``, and a colander ``String`` node's text is converted by the column."""
from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import Interval

from jsonapi_pyramid.durations import MAX_DAYS, duration_text, parse_duration
from jsonapi_pyramid.jsontypes import check_json_type, decode_value, fit_to_column, json_kind

BOUND = dt.timedelta(days=MAX_DAYS) - dt.timedelta(microseconds=1)


@given(st.timedeltas(min_value=-BOUND, max_value=BOUND))
def test_a_shown_duration_parses_back_to_the_same_timedelta(value):
    text = duration_text(value)
    assert parse_duration(text) == value
    assert text.lstrip("-").startswith("P") and "-" not in text[1:]


@pytest.mark.parametrize(("value", "shown"), [
    (dt.timedelta(0), "PT0S"), (dt.timedelta(hours=4, minutes=30), "PT4H30M"), (dt.timedelta(days=1, hours=2), "P1DT2H"),
    (dt.timedelta(hours=-1), "-PT1H"), (dt.timedelta(microseconds=1), "PT0.000001S"), (dt.timedelta(days=3), "P3D"),
    (dt.timedelta(seconds=59, milliseconds=250), "PT59.25S")])
def test_how_a_duration_is_shown(value, shown):
    assert duration_text(value) == shown


@pytest.mark.parametrize("text", ["P700000D", "-P700000D", "PT16800000H", "P1Y", "P1M", "PT1.5H", "P", "PT", "-P", "p1d",
                                  "P1D ", "P1DT", "P1234567890123D", "PT0.1234567S", "1:00:00"])
def test_what_is_no_duration(text):
    with pytest.raises(ValueError, match="duration|700000 days"):
        parse_duration(text)


def test_an_interval_column_converts_text_whichever_node_checked_it():
    interval = Interval()
    assert json_kind(interval) == "duration"
    assert check_json_type("duration", 3600) == "must be an ISO 8601 duration string (such as PT4H30M), not a number."
    assert decode_value(interval, "PT1H") == fit_to_column(interval, "PT1H") == dt.timedelta(hours=1)  # a String node's text
    assert fit_to_column(interval, dt.timedelta(hours=1)) == dt.timedelta(hours=1)
    for convert in (decode_value, fit_to_column):
        with pytest.raises(ValueError, match="not an ISO 8601 duration"):
            convert(interval, "soon")
