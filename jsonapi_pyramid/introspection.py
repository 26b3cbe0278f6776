"""What the library registers, as Pyramid introspectables: ``registry.introspector`` (in ``pshell``),
the debug toolbar and ``jsonapi-pyramid-resources`` list them. Each is registered by the
configuration action that registers the thing itself, so it is there once the configuration is
committed, with the file and line of the call that made it.

The categories, each item's discriminator in brackets:

* ``jsonapi registry`` [``"jsonapi"``]: the application's ``contract.Registry``
  (``registry.jsonapi``) as ``registry``, its parsed settings as ``settings`` (``cursor_secret``
  hidden);
* ``jsonapi resource types`` [the type name]: ``model``, ``declaration`` (the immutable
  ``declaration.ResourceDeclaration`` of the call), ``definition`` (the resolved
  ``ResourceDefinition``, frozen once the configuration is committed), ``path`` (of the
  collection, under the API root), every option of
  ``add_jsonapi_resource`` (None when not given) and ``given`` (the names of the options given);
  related to its custom operations;
* ``jsonapi operations`` [(model, on, name, method)]: ``type`` (the resource type's name), ``model``,
  ``on``, ``name``, ``request_method``, ``permission``, ``view``, ``validate``, ``conditional``,
  ``description``;
* ``jsonapi write checks`` [the check]: ``check``, run before every write operation in the order
  registered;
* ``jsonapi profiles``, ``jsonapi extensions`` [the URI]: ``uri``, ``description``.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["EXTENSIONS", "OPERATIONS", "PROFILES", "REGISTRY", "RESOURCE_TYPES", "WRITE_CHECKS", "operation",
           "registry", "resource_type", "uri", "write_check"]

REGISTRY = "jsonapi registry"
RESOURCE_TYPES = "jsonapi resource types"
OPERATIONS = "jsonapi operations"
WRITE_CHECKS = "jsonapi write checks"
PROFILES = "jsonapi profiles"
EXTENSIONS = "jsonapi extensions"


def registry(config: Any, jsonapi: Any) -> Any:
    """The introspectable of the application's ``contract.Registry``."""
    intr = config.introspectable(REGISTRY, "jsonapi", "the jsonapi_pyramid registry", "jsonapi registry")
    # the settings as parsed, secrets left out (the debug toolbar shows every item)
    intr["registry"] = jsonapi
    intr["settings"] = {name: "(hidden)" if "secret" in name else value for name, value in jsonapi.settings.items()}
    return intr


def resource_type(config: Any, definition: Any, options: Mapping[str, Any], option_names: Any) -> Any:
    """The introspectable of one ``add_jsonapi_resource`` call (``path`` is set when it commits)."""
    intr = config.introspectable(RESOURCE_TYPES, definition.type, definition.type, "jsonapi resource type")
    intr["model"], intr["definition"], intr["given"] = definition.model, definition, tuple(sorted(options))
    intr["declaration"] = definition.declaration
    for name in option_names:
        intr[name] = options.get(name)
    return intr


def operation(config: Any, operation: Any) -> Any:
    """The introspectable of one ``add_jsonapi_operation`` call (``type`` is set when it commits)."""
    key = (operation.model, operation.on, operation.name, operation.request_method)
    title = f"{operation.request_method} {operation.on} {operation.name or '(the standard one)'} of {operation.model.__name__}"
    intr = config.introspectable(OPERATIONS, key, title, "jsonapi operation")
    for item in ("model", "on", "name", "request_method", "permission", "view", "validate", "conditional", "description"):
        intr[item] = getattr(operation, item)
    return intr


def write_check(config: Any, check: Callable[..., Any]) -> Any:
    intr = config.introspectable(WRITE_CHECKS, check, config.object_description(check), "jsonapi write check")
    intr["check"] = check
    return intr


def uri(config: Any, category: str, uri: str, description: str) -> Any:
    """The introspectable of a profile or an extension the library applies."""
    intr = config.introspectable(category, uri, uri, category.removesuffix("s"))
    intr["uri"], intr["description"] = uri, description
    return intr
