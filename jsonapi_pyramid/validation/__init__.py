"""Validation of write payloads: the JSON:API envelope (owned by the library) and the application's
attribute rules (colander schemas), before anything changes.

The order of checks, each collecting every failure it finds:

1. ``body.request_data`` (the one body parser): the body is JSON, an object, and has ``data``.
   Otherwise 400: nothing below can be pointed at.
2. The envelope (``validate_resource``): ``data`` is a resource object with the endpoint's ``type``,
   ``data.id`` equals the URL id on update (a sent id on create: 403, or a client-generated id),
   no unknown members, ``attributes``/``relationships`` are objects, no read-only or unknown
   attribute, no unknown relationship, linkage of the right shape and size.
3. The application's colander schema for the operation (``create=`` / ``update=``), run field by
   field so that every failed rule becomes one error.
4. Linkage targets: one ``SELECT ... WHERE id IN (...)`` per relationship finds the resources the
   caller may see (the target's ``visible=``); a missing one fails at its item's pointer. Then the
   rules the mapping implies: a non-nullable to-one cannot be cleared, a member of a one-to-many
   whose foreign key cannot be null cannot be removed from it, a unique foreign key may link only
   one row.

Every failure becomes one error of a single ``ValidationFailed`` (422, title "Validation Error",
``source.pointer`` into the request body). What passes is a ``Changes`` (the new attribute values
and the resolved related entities) that ``changes.apply_changes`` writes onto the entity: this
package only validates, it never changes an entity.

The modules: ``envelope`` (resource payloads: envelope, attributes, relationships), ``linkage``
(relationship data: shape, lookup, the mapping's rules; relationship endpoints), ``rules`` (the
colander schema runner and the reusable rules), ``common`` (what they share).

**Application rules.** ``create=`` and ``update=`` of ``add_jsonapi_resource`` are colander
``MappingSchema`` classes over the JSON attribute names. On create every node without ``missing``
is required. An update (PATCH semantics) validates only the attributes sent, with the update schema
or, when there is none, the create schema; a sent attribute whose node is required must not be
empty. Schemas are bound per request (``schema.bind(request=..., entity=..., definition=...)``),
so a validator reads ``node.bindings`` to reach the database (``Unique``, ``Exists``). A
schema-level ``validator`` (``Confirmed``, ``RequiredWith``, or ``colander.All`` of them) sees the
attributes that passed their own rules.
"""

from __future__ import annotations

from .common import Failures
from .envelope import Changes, required_on_create, resolve_keyed, validate_resource, writable_attributes
from .linkage import Linkage, max_linkage_items, read_linkage, resolve_identifiers, validate_linkage
from .rules import Confirmed, DateString, Exists, RequiredWith, Unique, Url, run_schema

__all__ = [
    "Changes",
    "Confirmed",
    "DateString",
    "Exists",
    "Failures",
    "Linkage",
    "RequiredWith",
    "Unique",
    "Url",
    "max_linkage_items",
    "read_linkage",
    "required_on_create",
    "resolve_identifiers",
    "resolve_keyed",
    "run_schema",
    "validate_linkage",
    "validate_resource",
    "writable_attributes",
]
