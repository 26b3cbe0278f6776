"""``prefer.preferences``: the ``Prefer`` header as RFC 7240 writes it."""
from __future__ import annotations

import pytest

from jsonapi_pyramid.prefer import preferences


@pytest.mark.parametrize(("header", "expected"), [
    ("return=minimal", {"return": "minimal"}),
    ("RETURN=Minimal", {"return": "Minimal"}),  # names fold; values are compared by their reader
    ('return="minimal"', {"return": "minimal"}),
    ("respond-async, wait=100", {"respond-async": "", "wait": "100"}),
    ("return=minimal; foo=bar; baz, handling=lenient", {"return": "minimal", "handling": "lenient"}),
    ("return=representation, return=minimal", {"return": "representation"}),  # the first counts
    ('foo="a, b; c", return=minimal', {"foo": "a, b; c", "return": "minimal"}),  # separators inside quotes
    ('foo="say \\"hi\\""', {"foo": 'say "hi"'}),
    (" , ;x, =y", {}),
    ("", {}),
])
def test_preferences(header, expected):
    assert preferences(header) == expected
