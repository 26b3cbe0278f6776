"""``errors.url_is_utf8``: the path and the query string as PEP 3333 hands them over (latin-1
strings of the bytes sent) must decode as UTF-8, the query string after percent-decoding too. A
plain ASCII URL without percent-encoding is valid without decoding anything; every other one is
decoded."""
from __future__ import annotations

import pytest

from jsonapi_pyramid.errors import url_is_utf8


def _wsgi(text: str) -> str:
    """``text`` as a WSGI server hands it over: its UTF-8 bytes as a latin-1 string."""
    return text.encode("utf-8").decode("latin-1")


@pytest.mark.parametrize("path,query", [
    ("/api/articles", ""),
    ("/api/articles", "page[size]=50&include=author"),
    ("/api/articles", "filter[title]=caf%C3%A9"),  # percent-encoded UTF-8
    (_wsgi("/api/tags/café"), ""),  # UTF-8 in the path
    ("/api/articles", _wsgi("filter[title]=café")),  # raw UTF-8 in the query string
    ("/api/articles", "page%5Bsize%5D=5"),
])
def test_utf8_urls_pass(path, query):
    assert url_is_utf8({"PATH_INFO": path, "QUERY_STRING": query})


@pytest.mark.parametrize("path,query", [
    ("/api/tags/caf\xe9", ""),  # a latin-1 byte alone: not UTF-8
    ("/api/articles", "filter[title]=caf\xe9"),
    ("/api/articles", "filter[title]=%FF"),  # percent-encoded, not UTF-8
    ("/api/articles", "filter[title]=%C3"),  # a cut sequence
])
def test_other_urls_fail(path, query):
    assert not url_is_utf8({"PATH_INFO": path, "QUERY_STRING": query})


def test_an_environ_without_them_passes():
    assert url_is_utf8({})
