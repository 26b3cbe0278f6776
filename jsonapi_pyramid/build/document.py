"""The build stage: documents (resource objects, linkage, links and top-level members) as plain
dicts, from what the load stage read (``loading.Loaded``: primary rows, included rows and their
linkage, paged includes, metas, counts, cursors) and the request's plan (``query.QueryPlan``).

Building runs no SQL and reads no query parameter: every answer goes parse -> load -> build, then
the ``jsonapi`` renderer makes its bytes. Every answer that shows resources is made by one of three
functions, used by the read views, the write views and custom operations alike:
``resource_document`` (one resource or null), ``page_document`` (a page of them) and
``linkage_document`` (a relationship's linkage)::

    plan = parse_query(request, definition, collection=True)                 # parse
    loaded = load_document(request, plan, load_page(request, definition, plan))  # load
    document = page_document(request, plan, loaded)                           # build

URLs are formatted from one base URL per request (``request.resource_url`` of the ``api`` node,
from the request's URLs built once: ``urls.request_urls``), not computed per resource. What each
type shows (attributes and relationships after sparse fieldsets) is worked out once per type per
document.
"""
from __future__ import annotations

from itertools import groupby
from operator import itemgetter
from typing import Any, cast

from pyramid.interfaces import VH_ROOT_KEY, IResourceURL
from pyramid.request import Request
from pyramid.traversal import find_interface, resource_path

from ..contract import ResourceDefinition, get_registry
from ..load.include_pages import PagedMembers
from ..load.loading import Loaded
from ..parse.query import QueryPlan
from ..transformer import Transformer
from ..traversal import ApiRoot
from ..urls import request_urls
from .page_links import apply_cursors, page_links, paged_links
from .stats_meta import apply_stats

__all__ = ["DocumentBuilder", "linkage_document", "page_document", "resource_document"]

JSONAPI = {"version": "1.1"}


def _link_relationships(shown: dict[str, dict[str, Any]], linkage: dict[Any, Any]) -> None:
    """Put a resource's ``Loaded.linkage`` entry into its shown relationships: ``data``, and for
    a paged include its page links and ``meta.count``."""
    for name, data in linkage.items():
        member = shown.get(name)
        if member is None:
            continue
        if type(data) is PagedMembers:  # a paged include: its page, count and page links
            member["links"].update(paged_links(data, member["links"]["related"]))
            member["meta"] = {"count": data.window.count}
            data = data.members
        member["data"] = data


def resource_document(request: Request, plan: QueryPlan, loaded: Loaded) -> dict[Any, Any]:
    """The document whose primary data is ``loaded``'s one value (or null, when it has none):
    ``include``, ``fields`` and ``meta`` of ``plan`` apply, as ``includes.load_document`` loaded them."""
    return DocumentBuilder(request, plan).single(loaded)


def page_document(request: Request, plan: QueryPlan, loaded: Loaded) -> dict[Any, Any]:
    """The document whose primary data is the page ``loaded`` (includes, links, cursors, metas)."""
    return DocumentBuilder(request, plan).collection(loaded)


def linkage_document(request: Request, plan: QueryPlan, context: Any, loaded: Loaded) -> dict[Any, Any]:
    """The linkage document of a relationship node (``GET``, and the answer of to-many writes)
    from its linkage (``loading.load_linkage``): identifiers; to-many ones carry the related
    resource's URL in ``links.self``, and a to-many is a page (filters, sort, ``page``, ``totalCount``)."""
    relationship = context.relationship
    target = relationship.target_definition
    owner = context.definition
    builder = DocumentBuilder(request, plan)
    owner_url = builder.url(owner, owner.identity(context.record))
    links = {"self": f"{owner_url}/relationships/{relationship.name}", "related": f"{owner_url}/{relationship.name}"}
    if not relationship.many:
        entity = loaded.primary[0] if loaded.primary else None
        data: Any = None if entity is None else builder.identifier(target.definition_of(entity), target.identity(entity))
        return {"jsonapi": JSONAPI, "data": data, "links": links}
    if target.subtypes:  # instances (load_linkage_page)
        data = [builder.identifier(target.definition_of(member), target.identity(member), with_link=True)
                for member in loaded.primary]
    else:
        data = [builder.identifier(target, resource_id, with_link=True) for resource_id in loaded.primary]
    links.update(builder.page_links(loaded))
    document = {"jsonapi": JSONAPI, "data": data, "links": links}
    meta = builder.count_meta(loaded)
    if meta:
        document["meta"] = meta
    return apply_stats(apply_cursors(document, loaded), loaded.stats)


def api_base(request: Request) -> str:
    """Absolute URL of the ``api`` node with a trailing slash: the request's application URL (its
    host, scheme and ``SCRIPT_NAME``) and the API root's path, which is ``request.resource_url``'s
    answer worked out once per position of the API root in the tree (``Registry.api_paths``).
    Pyramid's ``resource_url`` answers itself under a virtual root (``X-Vhm-Root``), which
    changes the path per request, and when an ``IResourceURL`` adapter is registered for the API root."""
    api: Any = request.context
    while api is not None and not isinstance(api, ApiRoot):
        api = getattr(api, "__parent__", None)
    if api is not None and VH_ROOT_KEY not in request.environ:
        lineage: list[Any] = []
        node: Any = api
        while node is not None:
            lineage.append(node.__name__)
            node = getattr(node, "__parent__", None)
        paths = get_registry(request).api_paths
        path = paths.get(key := tuple(lineage))
        if path is None:
            path = paths[key] = _api_path(request, api)
        if path:
            return request_urls(request).application + path
    return cast("str", request.resource_url(find_interface(request.context, ApiRoot), app_url=request_urls(request).application))


def _api_path(request: Request, api: ApiRoot) -> str:
    """The API root's quoted path with a trailing slash, as ``resource_url`` builds it; "" when
    an ``IResourceURL`` adapter registered for it must answer."""
    if request.registry.queryMultiAdapter((api, request), IResourceURL) is not None:
        return ""
    path: str = resource_path(api)
    return path if path.endswith("/") else path + "/"


class DocumentBuilder:
    """Builds the documents of one request from loaded values (no SQL: see the module's text)."""

    def __init__(self, request: Request, plan: QueryPlan | None = None) -> None:
        self.request = request
        self.plan = plan or QueryPlan()
        self.urls = request_urls(request)
        self.base = api_base(request)
        self._shapes: dict[str, tuple[Any, ...]] = {}
        self._metas: dict[str, dict[str, Any]] = {}

    # -- resource objects --------------------------------------------------------------------
    def _shape(self, definition: ResourceDefinition) -> Any:
        """What resources of ``definition``'s type show in this document, worked out once:
        (transformer, attributes, the relationships shown as (name, the suffix of their
        ``self`` link, of their ``related`` link), the id getter, the type's URL prefix, the
        reader of the attribute values when the transformer's ``transform`` is not
        overridden, else None, and the id's spelling in an URL when it is not the id itself
        (``IdKey.in_url``: a text or composite id), else None)."""
        shape = self._shapes.get(definition.type)
        if shape is None:
            wanted = self.plan.fields.get(definition.type)
            attributes = definition.attributes if wanted is None else tuple(a for a in definition.attributes if a in wanted)
            names = tuple(definition.relationships.names())
            relationships = names if wanted is None else tuple(r for r in names if r in wanted)
            transformer = definition.new_transformer(self.request)
            plain = type(transformer).transform is Transformer.transform
            suffixes = tuple((name, f"/relationships/{name}", f"/{name}") for name in relationships)
            shape = (transformer, attributes, suffixes, definition.id_of, f"{self.base}{definition.type}/",
                     definition.readers.values(type(transformer), attributes) if plain else None,
                     definition.id_key.in_url if definition.id_key.quoted else None)
            self._shapes[definition.type] = shape
        return shape

    def url(self, definition: ResourceDefinition, resource_id: str) -> str:
        return f"{self.base}{definition.type}/{definition.id_key.in_url(resource_id)}"

    def resource(self, definition: ResourceDefinition, entity: Any, linkage: dict[Any, Any] | None = None) -> dict[Any, Any]:
        """The resource object of a value of ``definition``'s type (``records``); ``linkage``:
        ``Loaded.linkage``."""
        return self.resources(definition, (entity,), linkage)[0]

    def resources(self, definition: ResourceDefinition, entities: Any, linkage: dict[Any, Any] | None = None) -> list[dict[Any, Any]]:
        """The resource objects of values of one type, in order (the instances of a polymorphic
        base each as its own class's type)."""
        if definition.subtypes:
            out = []
            for entity in entities:
                out.extend(self._resources(definition.definition_of(entity), (entity,), linkage))
            return out
        return self._resources(definition, entities, linkage)

    def _resources(self, definition: ResourceDefinition, entities: Any, linkage: dict[Any, Any] | None) -> list[dict[Any, Any]]:
        """The resource objects of values of one (non-polymorphic) type: one loop, with what does
        not vary per resource (the URL prefix, the relationships' link suffixes, the reader of
        the attribute values) taken from the type's shape."""
        transformer, attributes, suffixes, get_id, prefix, read, in_url = (
            self._shapes.get(definition.type) or self._shape(definition))
        type_name = definition.type
        metas = self._metas.get(type_name) if self._metas else None
        out: list[dict[Any, Any]] = []
        append = out.append
        for entity in entities:
            resource_id = str(get_id(entity))
            url = prefix + (resource_id if in_url is None else in_url(resource_id))
            obj = {"type": type_name, "id": resource_id,
                   "attributes": dict(zip(attributes, read(entity))) if read is not None
                   else transformer.transform(entity, attributes)}
            if suffixes:
                shown = {}
                for name, to_self, to_related in suffixes:
                    shown[name] = {"links": {"self": url + to_self, "related": url + to_related}}
                if linkage:
                    linked = linkage.get((type_name, resource_id))
                    if linked:
                        _link_relationships(shown, linked)
                obj["relationships"] = shown
            obj["links"] = {"self": url}
            if metas:
                meta = {field: values[entity] for field, values in metas.items() if entity in values}
                if meta:
                    obj["meta"] = meta
            append(obj)
        return out

    def identifier(self, definition: ResourceDefinition, resource_id: Any, with_link: bool = False) -> dict[Any, Any]:
        resource_id = str(resource_id)
        identifier = {"type": definition.type, "id": resource_id}
        if with_link:
            identifier["links"] = {"self": self.url(definition, resource_id)}
        return identifier

    # -- documents ---------------------------------------------------------------------------
    def _top(self, data: Any, loaded: Loaded | None, links: dict[Any, Any], meta: dict[Any, Any] | None = None) -> dict[Any, Any]:
        document = {"jsonapi": JSONAPI, "data": data}
        if loaded is not None and self.plan.include_given:
            included = []
            for definition, run in groupby(loaded.included, key=itemgetter(0)):  # keeps the order
                included.extend(self.resources(definition, [entity for _d, entity in run], loaded.linkage))
            document["included"] = included
        document["links"] = links
        if meta:
            document["meta"] = meta
        return document

    def single(self, loaded: Loaded) -> dict[Any, Any]:
        """A document whose primary data is one resource (or null)."""
        self._metas = loaded.metas
        data = self.resource(loaded.definition, loaded.primary[0], loaded.linkage) if loaded.primary else None
        return self._top(data, loaded, {"self": self.urls.full})

    def collection(self, loaded: Loaded, extra_links: dict[Any, Any] | None = None) -> dict[Any, Any]:
        """A document whose primary data is a page of resources."""
        self._metas = loaded.metas
        data = self.resources(loaded.definition, loaded.primary, loaded.linkage)
        path_url = self.urls.path
        query = self.request.environ.get("QUERY_STRING")
        links = {"self": f"{path_url}?{query}" if query else path_url, **(extra_links or {}), **self.page_links(loaded, path_url)}
        document = self._top(data, loaded, links, self.count_meta(loaded))
        return apply_stats(apply_cursors(document, loaded), loaded.stats)

    @staticmethod
    def count_meta(loaded: Loaded) -> dict[Any, Any] | None:
        """The top-level ``meta`` members of the counts asked for: ``totalCount``, ``estimatedCount``
        and ``estimatedCountExact``."""
        meta: dict[Any, Any] = {}
        if loaded.total is not None:
            meta["totalCount"] = loaded.total
        if loaded.estimate is not None:
            meta["estimatedCount"], meta["estimatedCountExact"] = loaded.estimate
        return meta or None

    def page_links(self, loaded: Loaded, path_url: str | None = None) -> dict[Any, Any]:
        """``first``, ``prev``, ``next`` and (when the total is known) ``last``; every link keeps
        the request's other query parameters (``page_links.page_links``)."""
        return page_links(self.plan, loaded, path_url or self.urls.path)
