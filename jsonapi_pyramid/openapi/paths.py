"""The document's ``paths``, derived from the view table (``views.VIEWS``: every row, for every
type, as its ``Doc`` column describes it), custom operations and the other named views (a part
of the builder, ``document._Builder``)."""
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
    BuilderState,
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


class PathsMixin(BuilderState):
    # What the other mixins provide (annotations only).
    _read_parameters: Any
    _param: Callable[[str, dict[Any, Any]], dict[Any, Any]]
    _id_schema: Any
    request_example: Any

    # -- the view table's rows -----------------------------------------------------------------
    def _view_row(self, definition: Any, row: Any) -> None:
        """Every operation ``row`` of ``views.VIEWS`` gives ``definition``'s type: one per
        relationship of the row's kind on relationship nodes."""
        item_path = f"{self.root}/{definition.type}/{{id}}"
        id_param = self._id_param(definition)
        if row.context is Collection:
            self._row_operation(definition, row, f"{self.root}/{definition.type}", "collection", [], None)
        elif row.context is Item:
            self._row_operation(definition, row, item_path, "item", [id_param], None)
        elif row.context in (Related, ToOneLinkage, ToManyLinkage):
            related = row.context is Related
            for relationship in definition.relationships:
                if (row.context is ToOneLinkage and relationship.many) or (row.context is ToManyLinkage and not relationship.many):
                    continue
                path = f"{item_path}/{relationship.name}" if related else f"{item_path}/relationships/{relationship.name}"
                self._row_operation(definition, row, path, "related" if related else "linkage", [id_param], relationship)

    def _row_operation(self, definition: Any, row: Any, path: str, node: str, path_params: list[Any],
                       relationship: Any) -> None:
        T, method = definition.type, row.method
        prefix = f"{T}." if relationship is None else f"{T}.{relationship.name}."
        replacement = definition.operations.get((node, "", method)) if relationship is None else None
        common = {} if relationship is None else {"relationship": relationship}
        if replacement is not None:  # a custom operation replaces the row for this type
            op = self._custom(definition, replacement, node, method, path_params,
                              (403, 404, 409, 422) if node == "item" else (403, 409, 422),
                              operation_id=f"{T}.{node}.{method.lower()}",
                              summary=f"{method} {path} ({T}'s own operation)")
        elif row.doc is None:  # a row the table does not describe: documented generically
            op = self._operation(definition, method, row.permission, node, **common, summary=f"{method} {path}",
                                 operation_id=f"{prefix}{node}.{method.lower()}", parameters=path_params,
                                 responses={"200": {"description": "Success."}}, errors=(404, 409, 422))
        else:
            op = self._documented(definition, row, node, path_params, relationship)
        self._add(path, method, op)

    def _documented(self, definition: Any, row: Any, node: str, path_params: list[Any], relationship: Any) -> dict[Any, Any]:
        """The operation of a row from its ``views.Doc``."""
        doc, method = row.doc, row.method
        target = definition if relationship is None else relationship.target_definition
        names = {"T": definition.type, "R": "" if relationship is None else relationship.name, "U": target.type}
        status, _, schemas = doc.answer.partition(" ")
        response: dict[Any, Any] = {"description": doc.text.format(**names)}
        if schemas:
            to_one, _, to_many = schemas.partition("|")
            response = _document_response(target.type, to_many if to_many and relationship.many else to_one,
                                          response["description"])
        if status == "201":
            response["headers"] = {"Location": {"description": "The URL of the new resource.", "schema": {"type": "string"}}}
        body, example, note = self._row_body(definition, target, relationship, doc.body, method)
        common = {} if relationship is None else {"relationship": relationship}
        return self._operation(definition, method, row.permission, node, **common,
                               summary=doc.summary.format(**names),
                               operation_id=f"{definition.type}.{'' if relationship is None else relationship.name + '.'}{doc.name}",
                               parameters=path_params + self._row_query(definition, target, relationship, doc.query),
                               responses={status: response}, errors=doc.errors, body=body, example=example,
                               description=note)

    def _row_query(self, definition: Any, target: Any, relationship: Any, query: str) -> list[Any]:
        """The query parameters of a row (``views.Doc.query``)."""
        if query == "page":
            return cast("list[Any]", self._read_parameters(definition, collection=True))
        if query == "single":
            return cast("list[Any]", self._read_parameters(definition, collection=False))
        if query == "related":
            return cast("list[Any]", self._read_parameters(target, collection=relationship.many))
        if query == "linkage" and relationship.many:
            return cast("list[Any]", self._read_parameters(target, collection=True, include=False))
        return []

    def _row_body(self, definition: Any, target: Any, relationship: Any, body: str,
                  method: str) -> tuple[Any, Any, str | None]:
        """(schema, example, note) of a row's request body (``views.Doc.body``)."""
        if not body:
            return None, None, None
        if body in ("CreateRequest", "UpdateRequest"):
            kind = "create" if body == "CreateRequest" else "update"
            return _ref("schemas", _camel(definition.type, body)), self.request_example(definition, kind), None
        identifier = {"type": target.type, "id": _example_id(target)}
        schema = _ref("schemas", _camel(target.type, body))
        if body == "ToOneLinkageRequest":
            return schema, {"data": identifier}, None
        example: dict[str, Any] | None = {"data": [identifier]}
        note = None
        if method != "POST" and members_stay_linked(relationship):
            R = relationship.name
            note = (f"A member cannot leave `{R}`: its own link back is required (a foreign key that "
                    f"cannot be null), so removing one is a 422; link it elsewhere instead.")
            if method == "DELETE":
                example = None
        return schema, example, note

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
        index = {"type": "object", "required": ["jsonapi", "links", "meta"], "properties": {
            "links": {"type": "object", "properties": {"self": {"type": "string"}, "describedby": {"type": "string"}}},
            "meta": {"type": "object", "properties": {
                "collections": {"type": "object", "additionalProperties": {"type": "string", "format": "uri"}},
                "openapi": {"type": "string", "format": "uri"}, "docs": {"type": "string", "format": "uri"}}}}}
        self.paths[self.root] = {"get": {
            **common, "summary": "Where to start: every collection, this document and the reference page",
            "operationId": "api.index",
            "responses": {"200": {"description": "A document with only `links` and `meta`: `meta.collections` names the "
                                                 "URL of every resource type's collection.",
                                  "content": {MEDIA_TYPE: {"schema": index}}},
                          **{str(s): _ref("responses", _ERROR_NAMES[s]) for s in (401, 406, 500)}}}}
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
