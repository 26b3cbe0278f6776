"""The query parameters of each operation (a part of the builder, ``document._Builder``)."""
from __future__ import annotations

from typing import Any

from ..contract import ESTIMATED_COUNT, TOTAL_COUNT
from ..parse.filter_syntax import COUNT_OPERATORS, QUANTIFIERS
from ..parse.filter_terms import filter_operators
from .common import _LIST_FILTERS, _ORDER_FILTERS, _QUANTIFIED, _TEXT_FILTERS, BuilderState, _component_key, _ref
from .schemas import _column_schema
from .stats import stats_parameters


class ParametersMixin(BuilderState):
    # What the other mixins provide (annotations only).
    _id_schema: Any
    request_example: Any

    # -- parameters -----------------------------------------------------------------------------
    def _param(self, key: str, parameter: dict[Any, Any]) -> dict[Any, Any]:
        key = _component_key(key)
        self.parameters.setdefault(key, parameter)
        return _ref("parameters", key)

    def _list_param(self, name: str, items: list[Any], description: str, max_items: int | None = None) -> dict[Any, Any]:
        schema = {"type": "array", "items": {"type": "string", "enum": items}, "minItems": 1, "uniqueItems": True}
        if max_items:
            schema["maxItems"] = max_items
        return {"name": name, "in": "query", "required": False, "style": "form", "explode": False,
                "description": description, "schema": schema}

    def include_paths(self, definition: Any) -> list[str]:
        depth = self.settings["max_include_depth"]
        paths = []

        def walk(current: Any, prefix: Any, level: Any) -> None:
            for relationship in current.relationships:
                path = prefix + relationship.name
                paths.append(path)
                if level < depth:
                    walk(relationship.target_definition, path + ".", level + 1)

        walk(definition, "", 1)
        return paths

    def _read_parameters(self, definition: Any, collection: bool, include: bool = True) -> list[Any]:
        params = []
        paths = self.include_paths(definition) if include else []
        types = {definition.type: definition}
        if paths:
            params.append(self._param(f"include.{definition.type}", self._list_param(
                "include", paths, f"Related resources to add to `included` (comma-separated paths, at most "
                f"{self.settings['max_include_depth']} deep, at most {self.settings['max_include_paths']} paths).",
                self.settings["max_include_paths"])))
            for path in paths:
                current = definition
                for part in path.split("."):
                    relationship = current.relationships.get(part)
                    current = relationship.target_definition
                types[current.type] = current
                if relationship.many:
                    params.extend(self._include_page_parameters(definition, path))
        if include:
            for type_name, target in sorted(types.items()):
                names = list(target.attributes) + list(target.relationships.names())
                params.append(self._param(f"fields.{type_name}", {
                    "name": f"fields[{type_name}]", "in": "query", "required": False, "style": "form", "explode": False,
                    "description": f"Sparse fieldset of `{type_name}`: the attributes and relationships to show.",
                    "schema": {"type": "array", "items": {"type": "string", "enum": names}, "uniqueItems": True}}))
        for type_name, target in sorted(types.items()):
            metas = list(target.available_metas)
            if collection and type_name == definition.type:
                metas.extend((TOTAL_COUNT, ESTIMATED_COUNT))
            if metas:
                key = f"meta.{type_name}" + (".collection" if collection and type_name == definition.type else "")
                params.append(self._param(key, self._list_param(
                    f"meta[{type_name}]", metas,
                    f"Meta fields to compute for `{type_name}`" + (
                        f"; `{TOTAL_COUNT}` is the size of the whole filtered collection (top-level `meta`), "
                        f"`{ESTIMATED_COUNT}` the same size, exact up to `jsonapi.exact_count_limit` resources and "
                        "the database's estimate past it (top-level `meta.estimatedCount` and `meta.estimatedCountExact`)."
                        if TOTAL_COUNT in metas else "."))))
        if collection:
            params.extend(self._collection_parameters(definition))
        return params

    def _collection_parameters(self, definition: Any) -> list[Any]:
        T = definition.type
        params = []
        sortable = list(dict.fromkeys(list(definition.sortable) + ["id"]))
        keys = [key for field in sortable for key in (field, "-" + field)]
        params.append(self._param(f"sort.{T}", self._list_param(
            "sort", keys, "Sort keys in order; `-` for descending. Default: by id (always the last key). "
            "`<to-many>.count` sorts by the number of visible members, `<to-many>.max|min|sum.<attribute>` by that "
            "aggregate of theirs (NULL, sorted last, when no visible member has a value), also after to-one "
            "relationships (`author.articles.count`).")))
        for path in list(dict.fromkeys(list(definition.filterable) + ["id"])):
            value, is_id, kind = self._filter_value_schema(definition, path)
            params.append(self._param(f"filter.{T}.{path}", {
                "name": f"filter[{path}]", "in": "query", "required": False,
                "description": f"Equality on `{path}`; `v1,v2` means any of.", "schema": {"type": "string"}}))
            for operator in filter_operators(kind, is_id):  # what the parser accepts (filter_terms)
                if operator == "isnull":
                    schema: dict[str, Any] = {"type": "boolean"}
                elif operator in _LIST_FILTERS:
                    schema = {"type": "array", "items": value, "minItems": 1}
                elif operator in _TEXT_FILTERS:
                    schema = {"type": "string"}
                else:
                    schema = value
                order = " (in the order of the declared values)" if kind == "enum" and operator in _ORDER_FILTERS[2:] else ""
                parameter = {"name": f"filter[{path}][{operator}]", "in": "query", "required": False,
                             "description": f"`{path}` {operator}{order}.", "schema": schema}
                if operator in _LIST_FILTERS:
                    parameter.update(style="form", explode=False)
                params.append(self._param(f"filter.{T}.{path}.{operator}", parameter))
            params.extend(self._quantifier_parameters(definition, path))
        params.extend(stats_parameters(self, definition))  # the statistics profile (openapi/stats.py)
        max_size = self.settings["max_page_size"]
        params.append(self._param("page.number", {
            "name": "page[number]", "in": "query", "required": False, "description": "Page number, from 1.",
            "schema": {"type": "integer", "minimum": 1, "maximum": 999999999}}))
        params.append(self._param("page.size", {
            "name": "page[size]", "in": "query", "required": False,
            "description": f"Page size (default {self.settings['default_page_size']}, at most {max_size}).",
            "schema": {"type": "integer", "minimum": 1, "maximum": max_size}}))
        for key in ("after", "before"):
            params.append(self._param(f"page.{key}", {
                "name": f"page[{key}]", "in": "query", "required": False,
                "description": f"Cursor pagination (the JSON:API cursor pagination profile): the items {key} this "
                               "cursor, taken from an item's `meta.page.cursor` or a `links` URL; not with "
                               "`page[number]`. Ask for the first cursor page with the profile in `Accept`.",
                "schema": {"type": "string", "minLength": 1}}))
        return params

    def _include_page_parameters(self, definition: Any, path: str) -> list[Any]:
        """``page[<path>][size]``, ``[number]``, ``[after]`` and ``[before]`` of a to-many include
        path (docs/querying.rst, paged includes)."""
        maximum, default = self.settings["max_include_size"], self.settings["default_include_size"]
        return [
            self._param(f"page.{definition.type}.{path}.size", {
                "name": f"page[{path}][size]", "in": "query", "required": False,
                "description": f"At most this many `{path}` per parent in the compound document (default "
                               f"{default}, at most {maximum}); the relationship object then has `meta.count` "
                               "and pagination links to its related endpoint. Needs `include` to name the path.",
                "schema": {"type": "integer", "minimum": 1, "maximum": maximum}}),
            self._param(f"page.{definition.type}.{path}.number", {
                "name": f"page[{path}][number]", "in": "query", "required": False,
                "description": f"Which page of `{path}` each parent carries, from 1 (with a size).",
                "schema": {"type": "integer", "minimum": 1, "maximum": 999999999}}),
            *(self._param(f"page.{definition.type}.{path}.{key}", {
                "name": f"page[{path}][{key}]", "in": "query", "required": False,
                "description": f"Cursor pagination of `{path}` (the cursor pagination profile): each parent carries "
                               f"the members (in id order) {key} this cursor, a member identifier's `meta.page.cursor`; "
                               "with a size, not with a number. Members then carry their cursors and the links of "
                               "the relationship object carry cursors of its related endpoint.",
                "schema": {"type": "string", "minLength": 1}}) for key in ("after", "before")),
        ]

    def _quantifier_parameters(self, definition: Any, path: str) -> list[Any]:
        """``filter[<path>][count][<op>]`` and ``filter[<path>][any|all|none][<field>]`` when
        ``path`` ends in a to-many relationship (docs/querying.rst, filter groups and quantifiers)."""
        target, many = definition, False
        for part in path.split("."):
            relationship = target.relationships.get(part)
            if relationship is None:
                return []
            target, many = relationship.target_definition, relationship.many
        if not many:
            return []
        T, params = definition.type, []
        count = {"type": "integer", "minimum": 0, "maximum": 999999999}
        for operator in (None, *COUNT_OPERATORS):
            name = f"filter[{path}][count]" + (f"[{operator}]" if operator else "")
            params.append(self._param(f"filter.{T}.{path}.count" + (f".{operator}" if operator else ""), {
                "name": name, "in": "query", "required": False, "schema": count,
                "description": f"The number of `{path}` the caller may see, {operator or 'eq'} this value."}))
        for quantifier in QUANTIFIERS:
            for field in list(dict.fromkeys(list(target.filterable) + ["id"])):
                params.append(self._param(f"filter.{T}.{path}.{quantifier}.{field}", {
                    "name": f"filter[{path}][{quantifier}][{field}]", "in": "query", "required": False,
                    "schema": {"type": "string"},
                    "description": f"{_QUANTIFIED[quantifier]} `{path}` the caller may see has `{field}` equal to this "
                                   f"value. After `[{quantifier}]` come `{target.type}` filters of every form "
                                   "(operators, groups, quantifiers); terms under one quantifier hold for the same "
                                   "related resource."}))
        return params

    def _filter_value_schema(self, definition: Any, path: str) -> tuple[dict[Any, Any], bool, str]:
        """(schema of a value, is it an id comparison, the ``schema.column_kind`` compared)."""
        current = definition
        parts = path.split(".")
        for index, part in enumerate(parts):
            relationship = current.relationships.get(part)
            if relationship is not None:
                current = relationship.target_definition
                if index == len(parts) - 1:
                    return self._id_schema(current), True, current.id_kind
                continue
            if part == "id":
                return self._id_schema(current), True, current.id_kind
            field = current.fields[part]
            schema = _column_schema(field.sql_type) if field.sql_type is not None else {"type": "string"}
            return schema, False, field.kind
        return {"type": "string"}, False, "other"
