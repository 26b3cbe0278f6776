"""The conformance kit: generated tests over every resource an application registers.

An application turns it on in its own test suite with one module::

    # tests/test_conformance.py
    from jsonapi_pyramid.testing import conformance
    from myapp import main

    test_conformance = conformance(lambda: main({}, **{"sqlalchemy.url": "sqlite://"}),
                                   skip={"tokens": "made by POST /api/tokens with a password"})

and three fixtures in its ``conftest.py``:

* ``jsonapi_client``: a ``webtest.TestApp`` of the application over an empty database that is
  emptied again after the test;
* ``jsonapi_factories``: ``{type: factory}``, where ``factory(kit, n)`` returns the members of a
  create payload for the ``n``-th resource of that type (``attributes``, and ``relationships`` /
  ``id`` when needed; ``kit.create("people")`` makes a related resource and returns its
  identifier). Values are written as documents show them, so they can be compared;
* ``jsonapi_headers`` (optional): headers sent with every request (a bearer token that may do
  everything, for an application with ACLs).

``conformance(app_factory)`` builds the application once at collection time (no database is
touched) to read its registry, and returns a test function parametrized with one case per type
and check: ``<type>:crud``, ``<type>:errors``, ``<type>:filter``, ``<type>:sort``,
``<type>:pages``, ``<type>:stats`` (the statistics profile), ``<type>:sidepost`` (a type with
relationships: a new related resource in ``included``) and ``<type>:relationship:<name>``
for every relationship. ``skip`` maps a type or a case id to the reason it is skipped. What each
case checks is in ``checks``. Every response is validated against the JSON:API 1.1 schema shipped
in this package (``SCHEMA_PATH``).
Needs ``pytest``, ``webtest`` and ``jsonschema`` (the ``testing`` extra).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pyramid.request import Request

from ..contract import get_registry
from . import checks
from .client import SCHEMA_PATH, Client, schema_validator, without_local_ids
from .kit import Kit

__all__ = ["SCHEMA_PATH", "Client", "Kit", "cases_of", "conformance", "schema_validator", "without_local_ids"]

#: The checks generated for every type (relationships add one case each).
TYPE_CHECKS = ("crud", "errors", "filter", "sort", "pages", "stats")


def cases_of(registry: Any) -> list[str]:
    """The case ids of every registered type of a jsonapi ``Registry``, in registration order."""
    cases: list[str] = []
    for definition in registry.types.values():
        cases.extend(f"{definition.type}:{check}" for check in TYPE_CHECKS)
        if len(definition.relationships):  # sideposting needs a relationship to link the new resource by
            cases.append(f"{definition.type}:sidepost")
        cases.extend(f"{definition.type}:relationship:{name}" for name in definition.relationships.names())
    return cases


def conformance(app_factory: Callable[..., Any], *, skip: Mapping[str, str] | None = None) -> Any:
    """A pytest test function running every generated case of the application ``app_factory()``
    builds. ``skip``: type or case id -> reason."""
    import pytest  # the [testing] extra: imported only where a test suite asks for the cases

    registry = get_registry(app_factory().registry)
    skip = dict(skip or {})
    params = []
    for case in cases_of(registry):
        reason = skip.get(case) or skip.get(case.split(":")[0])
        params.append(pytest.param(case, id=case, marks=[pytest.mark.skip(reason=reason)] if reason else []))

    @pytest.mark.parametrize("jsonapi_case", params)
    def test_conformance(jsonapi_case: Any, jsonapi_client: Any, jsonapi_factories: Any, request: Request) -> None:
        try:
            headers = request.getfixturevalue("jsonapi_headers")
        except pytest.FixtureLookupError:
            headers = {}
        kit = Kit(Client(jsonapi_client, headers), jsonapi_factories)
        type_name, check, *rest = jsonapi_case.split(":")
        definition = kit.registry.get(type_name)
        if check == "relationship":
            checks.relationship(kit, definition, definition.relationships[rest[0]])
        else:
            getattr(checks, check)(kit, definition)

    return test_conformance

