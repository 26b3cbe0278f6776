"""The OpenAPI 3.1 description of an application's JSON:API, and the pages that publish it.

The document is derived, never written by hand, so it cannot drift from what the service does:

* the endpoints and their methods come from the view table (``views.VIEWS``) and from each
  resource's custom operations (``ResourceDefinition.operations``);
* the query parameters from the definitions: include paths up to ``jsonapi.max_include_depth``,
  sparse fieldsets, sortable and filterable paths with the operators each field's type accepts,
  pagination and meta fields;
* request bodies and their examples from the colander ``create`` / ``update`` schemas (required
  members, types, lengths, ranges, enumerations, email / uri / uuid formats), response bodies from
  the transformers and the mapped columns; an attribute a schema accepts but the transformer does
  not show is ``writeOnly``, one the transformer shows but no schema accepts is ``readOnly``;
* the bearer security scheme, required by an operation when the resource's ACL does not grant its
  permission to an anonymous caller (see ``anonymous_allowed``).

``get_document(registry)`` builds it once, when the configuration commits, and keeps it on the
jsonapi registry. ``GET /<api>/openapi.json`` serves it; ``GET /<api>/docs`` renders it with
Swagger UI, whose assets come from the optional ``swagger-ui-py`` package (``jsonapi_pyramid[docs-ui]``;
without it the page says what is missing and links the document) and are served by the service
itself (the page fetches nothing from outside). ``jsonapi-pyramid-openapi INI`` prints it.

Descriptions: a resource's ``description=`` (default: the model's docstring) describes its tag; a
colander node's ``description=`` or explicit ``title=`` describes the attribute, and ``example=``
on a node overrides the generated example value.

The package, one concern per module: ``schemas`` (colander and column types -> JSON Schema,
examples), ``common`` (shared names, error statuses, the security rule), the builder's parts
``components``, ``parameters``, ``paths``, ``atomic`` (``POST /api/operations``) and
``conditional`` (ETags and preconditions), ``document`` (the builder; ``get_document``),
``pages`` (the views and ``includeme``) and ``cli`` (the command).
"""
from __future__ import annotations

from .cli import main
from .common import OPENAPI_VERSION, anonymous_allowed, members_stay_linked
from .document import build_document, get_document
from .pages import includeme
from .schemas import colander_to_schema, example_for, node_nullable, node_required

__all__ = [
    "OPENAPI_VERSION",
    "anonymous_allowed",
    "build_document",
    "colander_to_schema",
    "example_for",
    "get_document",
    "includeme",
    "main",
    "members_stay_linked",
    "node_nullable",
    "node_required",
]
