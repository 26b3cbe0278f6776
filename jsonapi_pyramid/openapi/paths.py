"""The document's ``paths``, derived from the view table (``views.VIEWS``), custom operations and
the other named views (a part of the builder, ``document._Builder``)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from ..renderer import MEDIA_TYPE
from ..traversal import ApiRoot, Collection, Item, Related, Root, ToManyLinkage, ToOneLinkage
from .common import (
    _ALWAYS,
    _ERROR_NAMES,
    _WITH_BODY,
    DOCS_VIEW,
    DOCUMENT_VIEW,
    ERROR_STATUSES,
    _camel,
    _component_key,
    _doc,
    _document_response,
    _example_id,
    _ref,
    _security,
    anonymous_allowed,
    members_stay_linked,
)


class PathsMixin:
    # What the builder (``document._Builder``) and the other mixins provide (annotations only).
    registry: Any
    jsonapi: Any
    settings: Any
    root: str
    schemas: dict[str, dict[Any, Any]]
    parameters: dict[str, dict[Any, Any]]
    paths: dict[str, dict[Any, Any]]
    _read_parameters: Any
    _param: Callable[[str, dict[Any, Any]], dict[Any, Any]]
    _id_schema: Any
    request_example: Any

    # -- operations -----------------------------------------------------------------------------
    def _view_row(self, definition: Any, context: Any, method: str, permission: Any) -> None:
        T = definition.type
        item_path = f"{self.root}/{T}/{{id}}"
        id_param = self._id_param(definition)
        if context is Collection:
            self._collection_or_item(definition, f"{self.root}/{T}", method, permission, "collection", [])
        elif context is Item:
            self._collection_or_item(definition, item_path, method, permission, "item", [id_param])
        elif context in (Related, ToOneLinkage, ToManyLinkage):
            for relationship in definition.relationships:
                if (context is ToOneLinkage and relationship.many) or (context is ToManyLinkage and not relationship.many):
                    continue
                if context is Related:
                    path = f"{item_path}/{relationship.name}"
                else:
                    path = f"{item_path}/relationships/{relationship.name}"
                self._relationship_operation(definition, relationship, context is Related, path, method, permission, id_param)

    def _operation(self, definition: Any, method: Any, permission: Any, node: Any, relationship: Any = None, *,
                   summary: Any, operation_id: Any,
                   parameters: Any, responses: Any, errors: Any, body: Any = None, example: Any = None,
                   description: Any = None) -> dict[Any, Any]:
        public = anonymous_allowed(self.registry, definition, node, permission, relationship)
        statuses = set(_ALWAYS) | set(errors)
        if public is not True:
            statuses.add(403)
        if body is not None:
            statuses.update(_WITH_BODY)
        operation = {
            "tags": [definition.type],
            "summary": summary,
            "operationId": operation_id,
            "parameters": parameters,
            "responses": {**responses, **{str(s): _ref("responses", _ERROR_NAMES[s]) for s in sorted(statuses)}},
            "security": _security(public),
            "x-permission": str(permission),
        }
        notes = [description] if description else []
        notes.append({True: "Public: anonymous callers may do this (a token can change what they see).",
                      False: "Needs a bearer token: the ACL does not grant this to anonymous callers.",
                      None: "May need a bearer token: the ACL decides per resource."}[public])
        operation["description"] = " ".join(notes)
        if body is not None:
            media = {"schema": body}
            if example is not None:
                media["example"] = example
            operation["requestBody"] = {"required": True, "content": {MEDIA_TYPE: media}}
        return operation

    def _add(self, path: str, method: str, operation: dict[Any, Any]) -> None:
        self.paths.setdefault(path, {})[method.lower()] = operation

    def _collection_or_item(self, definition: Any, path: Any, method: Any, permission: Any, node: Any, path_params: Any) -> None:
        T = definition.type

        def doc(name: Any, text: Any) -> Any:
            return _document_response(T, name, text)

        key = (node, method)
        replacement = definition.operations.get((node, "", method))
        if replacement is not None:
            op = self._custom(definition, replacement, node, method, path_params,
                              (403, 404, 409, 422) if node == "item" else (403, 409, 422),
                              operation_id=f"{T}.{node}.{method.lower()}",
                              summary=f"{method} {path} ({T}'s own operation)")
        elif key == ("collection", "GET"):
            op = self._operation(definition, method, permission, node, summary=f"List {T}", operation_id=f"{T}.list",
                                 parameters=self._read_parameters(definition, collection=True),
                                 responses={"200": doc("CollectionDocument", f"A page of `{T}`.")}, errors=())
        elif key == ("collection", "POST"):
            location = {"Location": {"description": "The URL of the new resource.", "schema": {"type": "string"}}}
            response = doc("Document", f"The created `{T}`.")
            response["headers"] = location
            op = self._operation(definition, method, permission, node, summary=f"Create one of {T}",
                                 operation_id=f"{T}.create", responses={"201": response},
                                 parameters=self._read_parameters(definition, collection=False),
                                 errors=(403, 409), body=_ref("schemas", _camel(T, "CreateRequest")),
                                 example=self.request_example(definition, "create"))
        elif key == ("item", "GET"):
            op = self._operation(definition, method, permission, node, summary=f"Show one of {T}",
                                 operation_id=f"{T}.show",
                                 parameters=path_params + self._read_parameters(definition, collection=False),
                                 responses={"200": doc("Document", f"The `{T}` resource.")}, errors=(404,))
        elif key == ("item", "PATCH"):
            op = self._operation(definition, method, permission, node, summary=f"Update one of {T}",
                                 operation_id=f"{T}.update",
                                 parameters=path_params + self._read_parameters(definition, collection=False),
                                 responses={"200": doc("Document", f"The updated `{T}`.")}, errors=(404, 409),
                                 body=_ref("schemas", _camel(T, "UpdateRequest")),
                                 example=self.request_example(definition, "update"))
        elif key == ("item", "DELETE"):
            op = self._operation(definition, method, permission, node, summary=f"Remove one of {T}",
                                 operation_id=f"{T}.remove", parameters=path_params,
                                 responses={"204": {"description": "Removed."}}, errors=(404, 409))
        else:
            op = self._operation(definition, method, permission, node, summary=f"{method} {path}",
                                 operation_id=f"{T}.{node}.{method.lower()}", parameters=path_params,
                                 responses={"200": {"description": "Success."}}, errors=(404, 409, 422))
        self._add(path, method, op)

    def _relationship_operation(self, definition: Any, relationship: Any, related: bool, path: Any, method: Any,
                                permission: Any, id_param: Any) -> None:
        T, R = definition.type, relationship.name
        target = relationship.target_definition

        def doc(name: Any, text: Any) -> Any:
            return _document_response(target.type, name, text)

        node = "related" if related else "linkage"
        common = {"relationship": relationship}
        if related and method == "GET":
            op = self._operation(definition, method, permission, node, **common,
                                 summary=f"Related {R} of one of {T}", operation_id=f"{T}.{R}.related",
                                 parameters=[id_param] + self._read_parameters(target, collection=relationship.many),
                                 responses={"200": doc("CollectionDocument" if relationship.many else "NullableDocument",
                                                       f"The related `{target.type}`.")}, errors=(404,))
        elif not related and method == "GET":
            parameters = [id_param] + (self._read_parameters(target, collection=True, include=False) if relationship.many else [])
            op = self._operation(definition, method, permission, node, **common,
                                 summary=f"Linkage of {R} of one of {T}", operation_id=f"{T}.{R}.linkage",
                                 parameters=parameters,
                                 responses={"200": doc("ToManyLinkageDocument" if relationship.many else "ToOneLinkageDocument",
                                                       "The resource identifiers.")}, errors=(404,))
        elif not related and relationship.many and method in ("POST", "PATCH", "DELETE"):
            verb = {"POST": "Add to", "PATCH": "Replace", "DELETE": "Remove from"}[method]
            example: dict[str, Any] | None = {"data": [{"type": target.type, "id": _example_id(target)}]}
            note = None
            if method != "POST" and members_stay_linked(relationship):
                note = (f"A member cannot leave `{R}`: its own link back is required (a foreign key that "
                        f"cannot be null), so removing one is a 422; link it elsewhere instead.")
                if method == "DELETE":
                    example = None
            op = self._operation(definition, method, permission, node, **common,
                                 summary=f"{verb} {R} of one of {T}",
                                 operation_id=f"{T}.{R}.linkage.{method.lower()}", parameters=[id_param],
                                 responses={"200": doc("ToManyLinkageDocument", "The linkage after the change.")},
                                 errors=(404, 409), body=_ref("schemas", _camel(target.type, "ToManyLinkageRequest")),
                                 example=example, description=note)
        elif not related and not relationship.many and method == "PATCH":
            example = {"data": {"type": target.type, "id": _example_id(target)}}
            op = self._operation(definition, method, permission, node, **common,
                                 summary=f"Replace or clear {R} of one of {T}",
                                 operation_id=f"{T}.{R}.linkage.patch", parameters=[id_param],
                                 responses={"204": {"description": "Changed."}}, errors=(404, 409),
                                 body=_ref("schemas", _camel(target.type, "ToOneLinkageRequest")), example=example)
        else:
            op = self._operation(definition, method, permission, node, **common,
                                 summary=f"{method} {path}", operation_id=f"{T}.{R}.{node}.{method.lower()}",
                                 parameters=[id_param], responses={"200": {"description": "Success."}},
                                 errors=(404, 409, 422))
        self._add(path, method, op)

    # -- custom operations ----------------------------------------------------------------------
    def _custom_operations(self, definition: Any) -> list[Any]:
        return sorted(definition.operations.values(), key=lambda op: (op.on, op.name, op.request_method))

    def _custom_operation(self, definition: Any, operation: Any) -> None:
        T = definition.type
        on, name, method = operation.on, operation.name, operation.request_method.upper()
        if not name:  # replaces a standard operation: documented with the view table's rows
            return
        errors: tuple[int, ...]
        if on == "item":
            path = f"{self.root}/{T}/{{id}}/{name}"
            parameters = [self._id_param(definition)]
            node, errors = "item", (404, 409, 422)
        else:
            path = f"{self.root}/{T}/{name}"
            parameters, node, errors = [], "collection", (409, 422)
        self._add(path, method, self._custom(definition, operation, node, method, parameters, errors,
                                             operation_id=f"{T}.{on}.{name}.{method.lower()}",
                                             summary=f"{name}: {on} operation of {T}"))

    def _custom(self, definition: Any, operation: Any, node: Any, method: Any, parameters: Any, errors: Any, *,
                operation_id: Any, summary: Any) -> dict[Any, Any]:
        """An operation whose bodies the library cannot derive: generic JSON:API documents, unless
        the view (or its ``validate``) carries an ``openapi`` dict of OpenAPI operation fields."""
        description = operation.description or _doc(operation.view)
        body = None
        if operation.validate is not None and method in ("POST", "PATCH", "PUT", "DELETE"):
            body = {"type": "object", "properties": {"data": {"type": ["object", "array"]}, "meta": {"type": "object"}},
                    "required": ["data"]}
            if _doc(operation.validate):
                description = " ".join(filter(None, [description, "Body: " + cast("str", _doc(operation.validate))]))
        statuses = ("200", "201") if node == "collection" and method == "POST" else ("200",)
        generic = {"description": "The operation's document.", "content": {MEDIA_TYPE: {"schema": _ref("schemas", "AnyDocument")}}}
        op = self._operation(definition, method, operation.permission, node, summary=summary,
                             operation_id=operation_id, parameters=parameters,
                             responses=dict.fromkeys(statuses, generic),
                             errors=errors, body=body, description=description)
        for annotated in (operation.validate, operation.view):
            extra = getattr(annotated, "openapi", None)
            if isinstance(extra, dict):
                # ``responses`` are added to the derived ones (a status given replaces its own)
                responses = {**op.get("responses", {}), **extra.get("responses", {})}
                op.update(extra)
                op["responses"] = dict(sorted(responses.items()))
        return op

    def _id_param(self, definition: Any) -> dict[Any, Any]:
        T = definition.type
        return self._param(f"id.{T}", {
            "name": "id", "in": "path", "required": True, "description": f"The id of a `{T}` resource.",
            "schema": self._id_schema(definition)})

    # -- views registered by other modules ------------------------------------------------------
    def _other_views(self) -> None:
        """Named views on the root or the api node (a health check, say) that nothing above
        describes: found through Pyramid's introspector, documented by their docstrings."""
        introspector = self.registry.introspector
        for entry in introspector.get_category("views") or []:
            view = entry["introspectable"]
            context, name, methods = view["context"], view["name"], view["request_methods"]
            if context not in (Root, ApiRoot) or not name or not methods or name in (DOCUMENT_VIEW, DOCS_VIEW):
                continue
            methods = (methods,) if isinstance(methods, str) else methods
            path = (self.root if context is ApiRoot else "") + "/" + name
            for method in methods:
                if method == "HEAD":
                    continue
                callable_ = view["callable"]
                self.paths.setdefault(path, {})[method.lower()] = {
                    "tags": ["service"], "summary": (_doc(callable_) or name).split("\n")[0],
                    "operationId": f"service.{_component_key(name)}.{method.lower()}", "security": [{}],
                    "responses": {"200": {"description": "Success."}, "401": _ref("responses", "Unauthorized"),
                                  "500": {"description": ERROR_STATUSES[500]}, "503": {"description": ERROR_STATUSES[503]}},
                }

    # -- the publishing endpoints -----------------------------------------------------------------
    def _publishing_paths(self) -> None:
        common = {"tags": ["documentation"], "security": [{}], "parameters": []}
        self.paths[f"{self.root}/{DOCUMENT_VIEW}"] = {"get": {
            **common, "summary": "This OpenAPI document", "operationId": "openapi.document",
            "responses": {"200": {"description": "The OpenAPI 3.1 document.",
                                  "content": {"application/json": {"schema": {"type": "object", "required": ["openapi", "paths"]}}}},
                          **{str(s): _ref("responses", _ERROR_NAMES[s]) for s in (401, 406, 500)}}}}
        self.paths[f"{self.root}/{DOCS_VIEW}"] = {"get": {
            **common, "summary": "The reference page (Swagger UI, served offline)", "operationId": "openapi.docs",
            "responses": {"200": {"description": "An HTML page.", "content": {"text/html": {"schema": {"type": "string"}}}},
                          **{str(s): _ref("responses", _ERROR_NAMES[s]) for s in (401, 406, 500)}}}}

    def _error_response(self, status: int) -> dict[Any, Any]:
        response = {"description": ERROR_STATUSES[status],
                    "content": {MEDIA_TYPE: {"schema": _ref("schemas", "ErrorDocument")}}}
        if status == 401:
            response["headers"] = {"WWW-Authenticate": {"schema": {"type": "string"}, "description": "`Bearer realm=...`"}}
        if status == 503:
            response["headers"] = {"Retry-After": {"schema": {"type": "string"}, "description": "Seconds to wait."}}
        return response
