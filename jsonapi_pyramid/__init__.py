"""jsonapi_pyramid: JSON:API 1.1 resources for Pyramid applications over SQLAlchemy models.

Turn it on with ``config.include("jsonapi_pyramid")``, then register each model with
``config.add_jsonapi_resource(Model, ...)``. The documentation's quick start (docs/quickstart.rst)
has a complete example.
"""
from __future__ import annotations

import difflib
import gc
import os
import secrets
import traceback
import warnings
from typing import Any, Unpack, cast

from pyramid.config import Configurator
from pyramid.exceptions import ConfigurationError
from pyramid.interfaces import IRequestExtensions, ISecurityPolicy
from pyramid.request import Request
from pyramid.settings import asbool
from pyramid.tweens import EXCVIEW

from . import introspection
from .body import request_body
from .connection import read_rows
from .contract import ActionOrder, Registry, ResourceDefinition, ResourceOptions, get_registry
from .cors import parse_origins
from .deadlines import POOL_TIMEOUT, STATEMENT_TIMEOUT
from .declaration import ResourceDeclaration
from .errors import (
    BadRequest,
    Conflict,
    Forbidden,
    JsonApiError,
    NotFound,
    Unauthorized,
    ValidationFailed,
    error_object,
)
from .hints import did_you_mean
from .load.loading import count_of
from .negotiation import ATOMIC_EXT
from .pagination import PROFILE as CURSOR_PROFILE
from .pings import PING_AFTER
from .preconditions import if_match_check
from .relationships import RelationshipsCollection, ToManyRelationship, ToOneRelationship
from .renderer import JsonApiRenderer
from .request_class import bake
from .security import Permission
from .stats import PROFILE as STATS_PROFILE
from .transformer import Transformer
from .traversal import Root
from .writes import add_write_check

__version__ = "0.1.0"

__all__ = [
    "BadRequest",
    "Conflict",
    "Forbidden",
    "JsonApiError",
    "NotFound",
    "Permission",
    "RelationshipsCollection",
    "ResourceDeclaration",
    "ResourceDefinition",
    "ResourceOptions",
    "ToManyRelationship",
    "ToOneRelationship",
    "Transformer",
    "Unauthorized",
    "ValidationFailed",
    "add_jsonapi_resource",
    "count_of",
    "error_object",
    "get_registry",
    "includeme",
    "read_rows",
]

#: Settings under ``jsonapi.`` with their defaults (docs/settings.rst).
DEFAULTS = {
    "root_name": "api",
    "default_page_size": 20,
    "max_page_size": 100,
    "max_include_depth": 3,
    "max_include_paths": 10,
    "max_filters": 20,
    # members per parent of a to-many include path without page[<path>][size]; unset (0 here):
    # default_page_size, at most max_include_size. Includes are never unbounded: 0 is refused.
    "default_include_size": 0,
    # largest page[<path>][size] (and default_include_size); a request cannot lift it
    "max_include_size": 100,
    # levels of filter groups (and/or/not) and quantifiers (any/all/none) inside one another
    "max_filter_depth": 3,
    "max_body_bytes": 1024 * 1024,
    "max_linkage_items": 1000,
    "max_atomic_operations": 100,  # operations in one POST /api/operations; more: 413
    "max_sidepost_resources": 100,  # new resources in the included of one sideposting POST/PATCH; more: 413
    # spraypaint's nested saves (Graphiti's format: method, temp-id) translated into a sidepost (graphiti.py)
    "graphiti_sideposting": False,
    "max_groups": 1000,  # groups of one stats request with group=; more: 400 (stats.py)
    # meta[<type>]=estimatedCount: exact up to this many resources, the planner's estimate past it
    # (PostgreSQL; counts.py); never more than this + 1 rows read for it
    "exact_count_limit": 10000,
    # the OpenAPI document's info.title and info.version
    "openapi_title": "JSON:API",
    "openapi_version": "1.0.0",
    # the ``api`` node's ACL (a list of ACEs, given from Python); None: security.DEFAULT_ROOT_ACL
    "root_acl": None,
    # HMAC key of pagination cursors; empty: a random one per process (set it when several
    # processes serve the API, or cursors made by one are refused by the others).
    "cursor_secret": "",
    # Origins of browser pages allowed to call the API (CORS): space-separated, or "*"; empty: none.
    "cors_origins": "",
    # Seconds a browser may keep a preflight's answer (Chromium keeps at most 7200).
    "cors_max_age": 600,
    # ETag on reads (and 304), and on write answers; False: none (a cache in front makes its own).
    # If-Match on writes is honoured either way. docs/conditional.rst.
    "etags": True,
    # Tags kept per process from a key of what loading read to the ETag its 200 gave, so that a GET whose
    # If-None-Match names it is answered 304 without building the document (docs/etags.rst); 0: none.
    "etag_shortcut_entries": 10000,
    # A plain create's tag linkage known from the row its INSERT returns, or on PostgreSQL read with its INSERT
    # (one statement, docs/pipeline.rst); False: read back after it (for tables whose triggers link rows to a new one).
    "read_with_insert": True,
    # An ``acl=`` is only enforced by a security policy; without one every write would be open.
    # True: start anyway (the application enforces access some other way). docs/security.rst.
    "allow_acl_without_policy": False,
    # gc.freeze() once the configuration is committed (make_wsgi_app): start-up's objects leave the cycle collector's
    # generations, so its full collections stop traversing them. Process-wide, hence off by default
    # (a process that builds many applications, a test suite, would keep every discarded one's
    # cycles); the reference service's production.ini turns it on. docs/settings.rst.
    "gc_freeze": False,
    # statements kept from one request to the next (load.statements.StatementCache), least recently used dropped first
    "statement_cache_size": 512,
    # Idempotency-Key on POST/PATCH/DELETE: a retried write is answered once (idempotency.py);
    # needs the table of idempotency.metadata in the database. Keys expire after the TTL.
    "idempotency": False,
    "idempotency_ttl_seconds": 24 * 3600,
    # the largest answer kept with its key; a larger one is given but not kept (a retry: 409)
    "idempotency_max_stored_bytes": 1024 * 1024,
    # live keys one caller may keep (an anonymous one: per address); a keyed write past it: 429, not applied
    "idempotency_max_keys_per_caller": 10000,
    # expired keys deleted by the first key stored after this many seconds, per process; 0: never
    "idempotency_purge_interval_seconds": 3600,
    # GET /metrics (Prometheus) and who may read it (addresses or networks, blank-separated; others: 404).
    # docs/observability.rst; needs the extra jsonapi_pyramid[observability].
    "metrics": False,
    "metrics_allow": "127.0.0.1 ::1",
    # an OpenTelemetry TracerProvider of the application's (given from Python); None: the SDK's
    # variables decide (OTEL_EXPORTER_OTLP_ENDPOINT), docs/observability.rst
    "tracer_provider": None,
}

#: Integer settings for which 0 turns the feature off (the others must be at least 1).
_ZERO_TURNS_OFF = frozenset({"idempotency_purge_interval_seconds", "etag_shortcut_entries"})


def parse_settings(settings: Any) -> dict[Any, Any]:
    """The ``jsonapi.*`` settings of ``settings``, checked, with the defaults of ``DEFAULTS``; a
    ``jsonapi.*`` name that is no setting warns (a misspelt setting would be ignored silently)."""
    _warn_unknown(settings)
    parsed = {}
    for key, default in DEFAULTS.items():
        raw = settings.get(f"jsonapi.{key}", default)
        if default is None:  # a Python object, given as is
            parsed[key] = raw
        elif isinstance(default, bool):
            parsed[key] = asbool(raw)
        elif isinstance(default, int):
            try:
                parsed[key] = int(raw)
            except (TypeError, ValueError):
                raise ConfigurationError(f"jsonapi.{key} must be an integer, not {raw!r}") from None
            least = 0 if key in _ZERO_TURNS_OFF else 1
            if parsed[key] < least and (key != "default_include_size" or f"jsonapi.{key}" in settings):
                hint = " (to-many includes are always paged; unset, it is jsonapi.default_page_size)" \
                    if key == "default_include_size" else " (0 turns it off)" if least == 0 else ""
                raise ConfigurationError(f"jsonapi.{key} must be at least {least}{hint}")
        else:
            parsed[key] = str(raw) or default
    if not parsed["cursor_secret"]:
        parsed["cursor_secret"] = secrets.token_urlsafe(32)
    given = f" = {parsed['default_page_size']}" + ("" if "jsonapi.default_page_size" in settings else " (its default)")
    if parsed["default_page_size"] > parsed["max_page_size"]:  # first: the include size follows the page size
        raise ConfigurationError(
            f"jsonapi.max_page_size = {parsed['max_page_size']} is below jsonapi.default_page_size{given}: a list "
            f"without page[size] would be larger than the largest page; set jsonapi.default_page_size = "
            f"{parsed['max_page_size']} or less too, or raise jsonapi.max_page_size")
    if not parsed["default_include_size"]:  # unset: the page size, within the include maximum
        parsed["default_include_size"] = min(parsed["default_page_size"], parsed["max_include_size"])
    for bound in ("max_include_size", "max_page_size"):
        if parsed["default_include_size"] > parsed[bound]:
            raise ConfigurationError(
                f"jsonapi.default_include_size = {parsed['default_include_size']} is above jsonapi.{bound} = "
                f"{parsed[bound]} (its maximum); lower it or raise jsonapi.{bound}")
    parse_origins(parsed["cors_origins"])  # a malformed origin fails at start-up
    return parsed


def _warn_unknown(settings: Any) -> None:
    known = {f"jsonapi.{key}" for key in DEFAULTS} | {STATEMENT_TIMEOUT, POOL_TIMEOUT, PING_AFTER}
    for name in sorted(name for name in settings if isinstance(name, str) and name.startswith("jsonapi.")):
        if name not in known:
            hint = did_you_mean(name, known, prefix="jsonapi.") or "; docs/settings.rst lists them"
            warnings.warn(f"{name} is no setting of jsonapi_pyramid, so it is ignored{hint}", UserWarning, stacklevel=2)


def add_jsonapi_resource(config: Configurator, model: Any, **options: Unpack[ResourceOptions]) -> Any:
    """Register ``model`` as a JSON:API resource (a configurator directive:
    ``config.add_jsonapi_resource(Book, sortable=("title",))``; called as
    ``add_jsonapi_resource(config, Book, ...)`` a type checker sees the options too).

    Options (all optional): ``type`` (default ``model.__jsonapi_type__``), ``acl`` (ACEs, or
    ``(context, request) -> ACEs``), ``visible`` (``request -> SQL criterion`` of the rows the
    caller may see), ``filterable`` and ``sortable`` (paths; default every attribute, plus every
    relationship for filters), ``create`` and ``update`` (colander schemas for the attributes),
    ``client_ids`` (accept client-generated ids on create), ``writable`` (the attributes a client
    may send; default the schema's), ``description`` (for the OpenAPI document), ``restricted``
    (attribute -> ``request -> bool``: who may filter and sort by it, dotted paths included),
    ``apply`` (``(entity, attributes, request)``: writes validated attributes onto the entity;
    default ``setattr`` per attribute), ``relationship_defaults`` (relationship name ->
    ``request -> id or None``: the target when a create payload leaves it out),
    ``require_if_match`` (writes to an existing resource and its relationships need ``If-Match``:
    428 without it), ``stats`` (attribute -> the functions ``stats[<attribute>]`` offers; default
    from the column types, docs chapter "Statistics").

    A mistake in a declaration is a ``ConfigurationError`` that names this call's file and line:
    a misspelt option at once (with the option meant), the rest when the configuration commits.
    """
    unknown = sorted(set(options) - set(ResourceOptions.__annotations__))
    if unknown:
        name = unknown[0]
        meant = difflib.get_close_matches(name, ResourceOptions.__annotations__, n=1)
        raise ConfigurationError(
            f"add_jsonapi_resource({getattr(model, '__name__', model)}, ...) at {_call_site(config)}: unknown option "
            f"{name!r}" + (f" (did you mean {meant[0]!r}?)" if meant else "")
            + f"; the options are {', '.join(sorted(ResourceOptions.__annotations__))}")
    definition = ResourceDefinition(ResourceDeclaration.of(model, **options))
    registry = config.jsonapi_registry()
    intr = introspection.resource_type(config, definition, options, ResourceOptions.__annotations__)

    def register() -> None:
        registry.add(definition)
        intr["path"] = f"/{registry.settings['root_name']}/{definition.type}"

    # Every action registered here carries this call's file and line (Pyramid's ActionInfo), which
    # a ConfigurationExecutionError names: the resolving passes of this type are actions of its own.
    config.action(("jsonapi-resource", definition.type), register, order=ActionOrder.REGISTER, introspectables=(intr,))
    for index, step in enumerate(registry.resolve_passes(definition)):
        config.action(None, step, order=ActionOrder.RESOLVE + index)
    config.action(None, lambda: _check_enforced(config.registry, definition), order=ActionOrder.RESOLVE + index + 1)
    return definition


def _call_site(config: Configurator) -> str:
    """``file, line N: source`` of the user's call of a directive (direct calls too)."""
    info = config.action_info
    if getattr(info, "file", None):
        return f"{info.file}, line {info.line}: {info.src.strip()}"
    caller = traceback.extract_stack(limit=3)[0]  # the caller of add_jsonapi_resource
    return f"{caller.filename}, line {caller.lineno}: {(caller.line or '').strip()}"


def _check_enforced(pyramid_registry: Any, definition: ResourceDefinition) -> None:
    """An ``acl=`` that nothing would enforce is refused, and so is a resource without a database
    session per request (``config.include("jsonapi_pyramid.db")``, or the application's own
    ``request.dbsession``): every request would fail."""
    extensions = pyramid_registry.queryUtility(IRequestExtensions)
    if extensions is None or "dbsession" not in {*extensions.methods, *extensions.descriptors}:
        raise ConfigurationError(
            f"{definition.type} needs a database session per request, and this application has none: "
            'add config.include("jsonapi_pyramid.db") (an engine from sqlalchemy.url, transactions, '
            "request.dbsession and request.dbconnection), or give request.dbsession yourself with "
            "config.add_request_method(..., 'dbsession', reify=True)"
        )
    if (definition.acl is not None and pyramid_registry.queryUtility(ISecurityPolicy) is None
            and not get_registry(pyramid_registry).settings["allow_acl_without_policy"]):
        raise ConfigurationError(
            f"acl= is given for {definition.type} but no security policy is configured, so it would "
            "not be enforced and every operation would be open: call config.set_security_policy(...) "
            "(jsonapi_pyramid.security.BearerTokenPolicy, for instance), or set "
            "jsonapi.allow_acl_without_policy = true if access is enforced some other way"
        )


def resolved(pyramid_registry: Any) -> None:
    """When every type is resolved (each by the actions of its ``add_jsonapi_resource``): the
    registry and every type frozen (``Registry.freeze``)."""
    get_registry(pyramid_registry).freeze()


def _request_id(request: Request) -> str:
    # Kept in the environ: every attempt of a retried request (pyramid_retry) has the same id.
    # The header read from the environ (webob's ``request.headers`` maps ``X-Request-Id`` to this
    # key) and ``os.urandom(16).hex()`` (what ``secrets.token_hex(16)`` returns): fewer calls.
    environ = request.environ
    request_id = environ.get("jsonapi.request_id")
    if request_id is None:
        incoming = environ.get("HTTP_X_REQUEST_ID", "")
        if incoming and len(incoming) <= 64 and incoming.isascii() and incoming.replace("-", "").isalnum():
            request_id = incoming
        else:
            request_id = os.urandom(16).hex()  # 32 random hex digits, as uuid4().hex without its bookkeeping
        environ["jsonapi.request_id"] = request_id
    return cast("str", request_id)


def _freeze_heap() -> None:
    """``jsonapi.gc_freeze``: once the configuration is committed, collect start-up's garbage and freeze
    what is left (``gc.freeze``: ~98,000 objects in the reference service). A full collection
    then traverses only the objects made since, not the configuration, the mappers and the
    statement caches again each time (S2m: about four fifths of the collector's time per request)."""
    gc.collect()
    gc.freeze()


def _introspect_uris(config: Configurator) -> None:
    """The profiles and the extension the library applies, as introspectables (each registered by an
    action without a callable: nothing else to do)."""
    for category, uri, description in (
            (introspection.PROFILES, CURSOR_PROFILE, "cursor pagination: page[after], page[before] (pagination.py)"),
            (introspection.PROFILES, STATS_PROFILE, "statistics: stats[...], group (stats.py)"),
            (introspection.EXTENSIONS, ATOMIC_EXT, "atomic operations: POST /<root>/operations (atomic.py)")):
        config.action((category, uri), introspectables=(introspection.uri(config, category, uri, description),))


def includeme(config: Configurator) -> None:
    """Turn the library on: the root factory, the views, error rendering and negotiation."""
    registry = Registry(parse_settings(config.get_settings()))
    # The registry is registry.jsonapi once the configuration commits (an action, before any other);
    # until then the library's directives reach it through config.jsonapi_registry().
    config.add_directive("jsonapi_registry", lambda config: registry, action_wrap=False)
    config.action(("jsonapi", "registry"), lambda: setattr(config.registry, "jsonapi", registry),
                  order=ActionOrder.REGISTRY, introspectables=(introspection.registry(config, registry),))
    _introspect_uris(config)
    config.add_directive("add_jsonapi_resource", add_jsonapi_resource)
    config.set_root_factory(Root)
    config.add_request_method(_request_id, "request_id", reify=True)
    # The body, parsed once by one parser (body.py). A name of the library's own: WebOb's
    # request.json_body is left as WebOb has it.
    config.add_request_method(request_body, "jsonapi_body", reify=True)
    config.add_directive("add_jsonapi_write_check", add_write_check)  # preconditions of every write
    config.add_renderer("jsonapi", JsonApiRenderer)  # views return documents (renderer.py)
    config.include(".write.locking")  # a to-many set is replaced under its owner's row lock (first check)
    config.add_jsonapi_write_check(if_match_check)  # If-Match / 412 / 428 (preconditions.py)
    config.include(".errors")
    config.include(".views")
    config.include(".operations")  # add_jsonapi_operation and its view predicate
    config.include(".atomic")  # POST /api/operations: the atomic operations extension
    config.include(".sideposting")  # new resources in the included of a POST/PATCH (the sideposting extension)
    config.include(".graphiti")  # after it: spraypaint's format, when jsonapi.graphiti_sideposting is on
    config.include(".openapi")  # GET /api/openapi.json and the /api/docs page, built from the registry
    config.include(".logging")  # access log line per request, X-Request-Id
    config.include(".observability")  # /metrics and traces, when jsonapi.metrics or OTEL_* ask for them
    # CORS: preflights answered before anything else; headers on every answer, errors included.
    config.add_tween("jsonapi_pyramid.cors.cors_tween_factory", under="jsonapi_pyramid.logging.access_log_tween_factory",
                     over=("jsonapi_pyramid.db.transient_error_tween_factory", "pyramid_tm.tm_tween_factory", EXCVIEW))
    # ETag on every GET/HEAD 200 with a body, 304 for If-None-Match (under CORS: a 304 has its headers).
    if registry.settings["etags"]:
        config.add_tween("jsonapi_pyramid.conditional.etag_tween_factory", under="jsonapi_pyramid.cors.cors_tween_factory",
                         over=("jsonapi_pyramid.db.transient_error_tween_factory", "pyramid_tm.tm_tween_factory", EXCVIEW))
    config.add_tween("jsonapi_pyramid.negotiation.negotiation_tween_factory", under=EXCVIEW)
    # Query parameter names checked for every method before traversal and views (400, no change).
    config.add_tween("jsonapi_pyramid.parse.query.strict_parameters_tween_factory",
                     under="jsonapi_pyramid.negotiation.negotiation_tween_factory")
    if registry.settings["idempotency"]:  # a retried keyed write answered once, in its transaction
        config.add_tween("jsonapi_pyramid.idempotency.idempotency_tween_factory",
                         under="jsonapi_pyramid.parse.query.strict_parameters_tween_factory")
    # 401 for a request whose bearer token is refused (only with a BearerTokenPolicy).
    config.add_tween("jsonapi_pyramid.security.credentials_tween_factory", under=EXCVIEW)
    config.action(("jsonapi", "resolved"), lambda: resolved(config.registry), order=ActionOrder.RESOLVED)
    # One request class with every request property, not one made per request (request_class.py).
    config.action(("jsonapi", "request_class"), lambda: bake(config.registry), order=ActionOrder.REQUEST_CLASS)
    if registry.settings["gc_freeze"]:
        # The last action of the commit that ``make_wsgi_app`` runs; not an ``ApplicationCreated``
        # subscriber: any subscriber makes Pyramid notify its events on every request (~33 calls).
        config.action(("jsonapi", "gc_freeze"), _freeze_heap, order=ActionOrder.GC_FREEZE)
