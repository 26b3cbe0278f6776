"""Building the document: ``get_document`` (built once, kept on the registry) and the builder,
made of its parts (``components``, ``parameters``, ``paths``)."""
from __future__ import annotations

from typing import Any

import orjson

from ..build.stats_meta import PROFILE as STATS_PROFILE
from ..contract import get_registry
from ..negotiation import SIDEPOST_EXT
from ..renderer import MEDIA_TYPE
from ..views import VIEWS
from .atomic import add_atomic_operations
from .common import _ERROR_NAMES, ERROR_STATUSES, OPENAPI_VERSION, SECURITY_SCHEME
from .components import ComponentsMixin
from .conditional import add_conditional_requests
from .idempotency import add_idempotency
from .parameters import ParametersMixin
from .paths import PathsMixin
from .prefer import add_prefer
from .sideposting import add_sideposting


def get_document(registry: Any) -> dict[Any, Any]:
    """The OpenAPI document of the application (built on first use, then kept)."""
    jsonapi = get_registry(registry)
    document = getattr(jsonapi, "openapi_document", None)
    if document is None:
        document = build_document(registry)
        jsonapi.openapi_document = document
        jsonapi.openapi_bytes = orjson.dumps(document)
    return document


def build_document(registry: Any) -> dict[Any, Any]:
    """Build the OpenAPI 3.1 document of the Pyramid ``registry``'s resources (not cached)."""
    jsonapi = get_registry(registry)
    document = add_sideposting(_Builder(registry).build(), jsonapi)
    return add_idempotency(add_prefer(add_conditional_requests(document, jsonapi), jsonapi), jsonapi)


class _Builder(PathsMixin, ParametersMixin, ComponentsMixin):
    """Builds one document from a Pyramid registry."""

    def __init__(self, registry: Any) -> None:
        self.registry = registry
        self.jsonapi = get_registry(registry)
        self.settings = self.jsonapi.settings
        self.root = "/" + self.settings["root_name"]
        self.schemas: dict[str, dict[Any, Any]] = {}
        self.parameters: dict[str, dict[Any, Any]] = {}
        self.paths: dict[str, dict[Any, Any]] = {}

    # -- document -----------------------------------------------------------------------------
    def build(self) -> dict[Any, Any]:
        self._base_schemas()
        definitions = sorted(self.jsonapi.types.values(), key=lambda d: d.type)
        for definition in definitions:
            self._resource_schemas(definition)
        for row in VIEWS:
            for definition in definitions:
                self._view_row(definition, row)
        for definition in definitions:
            for operation in self._custom_operations(definition):
                self._custom_operation(definition, operation)
        self._publishing_paths()
        self._other_views()
        add_atomic_operations(self)  # POST /api/operations (openapi/atomic.py)
        responses = {_ERROR_NAMES[status]: self._error_response(status) for status in ERROR_STATUSES}
        document = {
            "openapi": OPENAPI_VERSION,
            "info": {
                "title": self.settings["openapi_title"],
                "version": self.settings["openapi_version"],
                "description": (
                    "A JSON:API 1.1 service (https://jsonapi.org/format/1.1/). Every document is "
                    f"`{MEDIA_TYPE}`; send bodies with that `Content-Type`. Authenticate with "
                    "`Authorization: Bearer <token>`. A method an endpoint does not list answers 405 with `Allow`. "
                    "Extensions supported: atomic operations (https://jsonapi.org/ext/atomic) on "
                    f"`POST {self.root}/operations`; sideposting ({SIDEPOST_EXT}): new resources in the `included` "
                    "of a create or update, all created and linked in one transaction. "
                    f"Profile supported: statistics ({STATS_PROFILE}): `stats[total]=count`, "
                    "`stats[<attribute>]=count,minimum,maximum,sum,average` and `group=<path>` on every collection "
                    "answer aggregates over the whole filtered set the caller may see in `meta.stats`. "
                    "Filters combine: terms are ANDed; `filter[or][<n>][...]` (members 0, 1, ...: each the AND of "
                    "its terms), `filter[and][<n>][...]` and `filter[not][...]` group them; a to-many relationship "
                    "takes `[any]`, `[all]`, `[none]` followed by filters of its type, and `[count][<op>]` "
                    "(rows the caller may not see never match and never count). At most "
                    f"{self.settings['max_filters']} terms, {self.settings['max_filter_depth']} levels of groups and "
                    "quantifiers."
                ),
            },
            "jsonSchemaDialect": "https://spec.openapis.org/oas/3.1/dialect/base",
            "tags": [
                {"name": d.type, **({"description": d.description} if d.description else {})} for d in definitions
            ] + [{"name": "operations", "description": "Atomic operations (https://jsonapi.org/ext/atomic)."},
                 {"name": "documentation", "description": "This description and its reference page."},
                 {"name": "service", "description": "Operational endpoints of the service."}],
            "paths": dict(sorted(self.paths.items())),
            "components": {
                "schemas": self.schemas,
                "parameters": dict(sorted(self.parameters.items())),
                "responses": responses,
                "securitySchemes": {
                    SECURITY_SCHEME: {
                        "type": "http", "scheme": "bearer",
                        "description": "A token from the service's token endpoint, sent as `Authorization: Bearer <token>`.",
                    }
                },
            },
        }
        return document
