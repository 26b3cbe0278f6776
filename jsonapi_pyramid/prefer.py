"""The ``Prefer`` request header (RFC 7240): ``return=minimal`` on the writes that may answer without
a document.

``Prefer: return=minimal`` on ``PATCH`` of a resource or of a relationship asks for 204 instead of
the document; the answer says so with ``Preference-Applied: return=minimal`` (and keeps its
``ETag``: ``views.write``). ``return=representation`` is the default. Everywhere else ``Prefer``
is ignored, as RFC 7240 lets a server ignore any preference: on ``POST`` (JSON:API requires the
created resource's document), ``DELETE`` and ``GET``; so are unknown preferences, their
parameters and any later instance of a preference already given (RFC 7240 section 2: the first
counts).
"""
from __future__ import annotations

import re

from pyramid.request import Request

__all__ = ["APPLIED", "MINIMAL", "preferences", "return_minimal"]

#: The response header naming the preferences applied.
APPLIED = "Preference-Applied"
#: The preference, as ``Preference-Applied`` names it.
MINIMAL = "return=minimal"

# a comma or semicolon outside a quoted string ends a member (RFC 7240: preference and parameter)
_MEMBERS = re.compile(r'(?:[^,"]|"(?:[^"\\]|\\.)*")+')
_PARTS = re.compile(r'(?:[^;"]|"(?:[^"\\]|\\.)*")+')


def preferences(header: str) -> dict[str, str]:
    """``Prefer`` -> {preference name (lower case): value ("" when none; unquoted)}, the first
    instance of each name; parameters after ``;`` are left out."""
    found: dict[str, str] = {}
    for member in _MEMBERS.findall(header):
        parts = _PARTS.findall(member)
        if not parts:
            continue
        name, _, value = parts[0].partition("=")
        name, value = name.strip().lower(), value.strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        if name:
            found.setdefault(name, value)
    return found


def return_minimal(request: Request) -> bool:
    """Whether ``request`` prefers ``return=minimal`` (any case)."""
    header = request.headers.get("Prefer")
    return header is not None and preferences(header).get("return", "").lower() == "minimal"
