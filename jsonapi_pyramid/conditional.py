"""Entity tags (RFC 9110 sections 8.8.3 and 13; CONTRACT.md section 8): ``ETag`` and 304 on reads.

* Every 200 answer to ``GET``/``HEAD`` with a body (every JSON:API document; files of known size
  up to 8 MiB, such as the docs page's assets, are read for it; streams are left alone) gets a
  strong ``ETag``: a SHA-256 digest (128 bits of it) of the bytes sent. Whatever changes those bytes
  (data, ``include``, sparse fieldsets, metas, what the caller may see, the page, ``totalCount``)
  changes the tag; nothing else does. One place computes it, the tween below, for every view.
* ``If-None-Match`` (one tag, a list, or ``*``) naming it -> 304 with the ``ETag`` and no body.
  The comparison is the weak one (RFC 9110 section 13.1.2): ``W/"x"`` matches ``"x"``.
* The tag of ``GET /api/<type>/<id>`` without query parameters is the one ``If-Match`` compares:
  its document shows relationship links, not linkage, so the tag is the digest of its bytes *and*
  of the linkage of every relationship as the caller may read it (``tag_linkage.linkage_columns``),
  read by traversal in the statement that reads the row and handed to the tween by the view
  (``tag_item``). docs/etags.rst follows this path.
* ``resource_etag`` gives the tag that ``GET /api/<type>/<id>`` (no query parameters) would carry
  for the caller, without a request: ``preconditions`` compares ``If-Match`` with it, and every
  write answer that leaves the resource in place carries it in ``X-Resource-ETag`` (``tag_owner``):
  the ``If-Match`` of the next write to the resource or any of its relationships. Answers whose
  data is the resource (``PATCH`` 200, ``POST`` 201) carry it as their ``ETag`` too
  (``tag_answer``): when such an answer is the document a plain ``GET`` gives, both are the digest
  of the bytes the renderer makes of it (``renderer.RENDERED``), as ``GET``'s is of its bytes. The
  linkage answers of to-many relationship writes carry the ``ETag`` of their own bytes instead
  (``tag_body``), the one ``GET`` of the same URL gives right after.
* A revalidation that skips building (``unchanged``): the read views call it after loading and
  before building. For a ``GET`` with ``If-None-Match``, the key of what its loading read
  (``loaded_key``: the rows, the URL, ``Accept``, the caller); the tween keeps, per process, the
  tag the built answer got under it. The next revalidation with that key whose ``If-None-Match``
  names the tag is answered ``304`` with it, its document neither built nor rendered. The tag
  itself is unchanged: the digest of the bytes built from that key. ``jsonapi.etag_shortcut_entries``
  bounds the tags kept (0: none).
* ``jsonapi.etags = false`` turns all of this off (no tween, no tag on write answers); ``If-Match``
  is still honoured by ``preconditions``.
"""
from __future__ import annotations

import hashlib
import re
from typing import Any, cast

from pyramid.request import Request
from pyramid.response import Response

from .build.document import DocumentBuilder
from .connection import flush_session
from .contract import BoundedCache, get_registry
from .load.loading import Loaded
from .load.stored import load_stored
from .load.tag_linkage import read_linkage
from .loaded_key import loaded_key
from .parse.query import QueryPlan
from .renderer import RENDERED, dumps

__all__ = [
    "ANY",
    "RESOURCE_ETAG",
    "etag_of",
    "etag_tween_factory",
    "parse_entity_tags",
    "resource_etag",
    "strong_match",
    "tag_answer",
    "tag_body",
    "tag_item",
    "tag_owner",
    "unchanged",
    "weak_match",
]

#: The header naming the resource's own ``ETag`` on write answers (``tag_owner``).
RESOURCE_ETAG = "X-Resource-ETag"
#: The linkage part of the ``ETag`` of a plain ``GET`` of an item, for the tween (``tag_item``).
_LINKAGE = "jsonapi.etag_linkage"
#: The key of what a read loaded (``loaded_key``), for the tween to keep the tag its 200 gets under it.
_KEY = "jsonapi.etag_key"
#: The tag of an answer ``unchanged`` did not build, for the tween.
_UNCHANGED = "jsonapi.etag_unchanged"

#: ``parse_entity_tags("*")``.
ANY = "*"

_TAG = re.compile(r'\s*(W/)?"([\x21\x23-\x7e\x80-\xff]*)"\s*(?:,|$)')
#: A file response (the docs page's assets) up to this size is read into memory for its tag.
_MAX_FILE_BYTES = 8 * 1024 * 1024
#: Headers a 304 keeps from the 200 it stands for (RFC 9110 section 15.4.5), besides ``ETag``.
_KEPT_BY_304 = {"etag", "vary", "cache-control", "content-location", "date", "expires", "x-request-id"}


def etag_of(body: bytes, linkage: bytes = b"") -> str:
    """The strong entity tag of ``body``: a quoted hex SHA-256 digest cut to 128 bits; of
    ``body`` and the ``linkage`` of a resource's relationships (``tag_linkage.linkage_columns``) when given.

    SHA-256 rather than BLAKE2b: OpenSSL's SHA-256 uses the CPU's SHA extensions where there are
    some (this machine: 3.5x faster than hashlib's BLAKE2b on a 150 KiB document)."""
    digest = hashlib.sha256(body)
    if linkage:  # a document is one line of JSON: nothing else ends with a newline and more
        digest.update(b"\n" + linkage)
    return '"' + digest.hexdigest()[:32] + '"'


def parse_entity_tags(header: str) -> Any:
    """``If-Match``/``If-None-Match`` -> ``ANY``, or a list of ``(weak, opaque tag)``, the
    opaque tag with its quotes. A malformed member ends the list (it can never match)."""
    header = header.strip()
    if header == ANY:
        return ANY
    tags = []
    position = 0
    while position < len(header):
        match = _TAG.match(header, position)
        if match is None:
            break
        tags.append((bool(match.group(1)), f'"{match.group(2)}"'))
        position = match.end()
    return tags


def weak_match(tags: Any, etag: str) -> bool:
    """Whether ``tags`` (``parse_entity_tags``) names ``etag``, by weak comparison."""
    return tags == ANY or any(tag == etag for _weak, tag in tags)


def strong_match(tags: Any, etag: str) -> bool:
    """Whether ``tags`` names ``etag`` by strong comparison (a weak tag never matches)."""
    return tags == ANY or any(tag == etag and not weak for weak, tag in tags)


def resource_etag(request: Request, definition: Any, entity: Any, linkage: bytes | None = None) -> str:
    """The ``ETag`` of ``GET /api/<type>/<id>`` (no query parameters) for this caller, now: the
    digest of that document's bytes and of the linkage of its relationships (``linkage``, as read
    with the row, or read now: one statement, none for a type without relationships). The
    document is built by the read's builder over ``entity``, the resource's row as loading read it
    from the database (a record, or an instance read again: ``stored.load_stored`` after a write,
    the row ``preconditions`` re-reads under its lock), never over values a request assigned in memory."""
    builder = DocumentBuilder(request, QueryPlan())
    document = builder.single(Loaded.one(definition, entity))
    document["links"]["self"] = builder.url(definition, definition.identity(entity))
    if linkage is None:
        linkage = read_linkage(request, definition, definition.id_key.value(entity))
    return etag_of(dumps(document), linkage)


def tag_item(request: Request, context: Any) -> None:
    """Tag the answer to ``GET /api/<type>/<id>`` without query parameters (``views.read.show``)
    as ``resource_etag`` does: the tween digests its bytes with the linkage of the item's
    relationships, read by traversal with the row (``traversal.Item.linkage``), or now."""
    if not etags_enabled(request):
        return
    linkage = context.linkage
    if linkage is None:
        definition = context.definition
        linkage = read_linkage(request, definition, definition.id_key.value(context.record))
    request.environ[_LINKAGE] = linkage


def unchanged(request: Request, loaded: Any) -> Response | None:
    """After loading (``loaded``: a ``loading.Loaded``), before building (the read views), for a
    revalidation (``If-None-Match``): ``request.response``, to be answered ``304`` by the tween,
    when a revalidation built from the same key (``loaded_key``: what was loaded, for this URL, ``Accept`` and caller) gave a tag that
    ``If-None-Match`` names. Else None: build the document; the tween keeps its tag under the key.
    A request without ``If-None-Match`` computes no key: a plain 200 costs nothing more."""
    environ = request.environ
    condition = environ.get("HTTP_IF_NONE_MATCH")
    if condition is None:
        return None
    tags = get_registry(request).etag_tags
    if tags is None:
        return None
    key = loaded_key(request, loaded, environ.get(_LINKAGE, b""))
    if key is None:
        environ.pop(_KEY, None)  # (a retried request's first attempt may have left one)
        return None
    environ[_KEY] = key
    tag = tags.get(key)
    if tag is None or not weak_match(parse_entity_tags(condition), tag):
        return None
    environ[_UNCHANGED] = tag  # the tween sets it, where it sets a built answer's
    return request.response


def etags_enabled(request: Request) -> bool:
    """``jsonapi.etags`` (default true)."""
    return bool(request.registry.jsonapi.settings["etags"])


def tag_owner(request: Request, definition: Any, entity: Any, stored: Any = None, linkage: bytes | None = None) -> str | None:
    """Give the answer to a write on ``entity`` (or one of its relationships) the resource's new
    tag in ``X-Resource-ETag``, unless ``jsonapi.etags`` is off; returns it. Flushes first; the
    tag is that of the row read back (``load_stored``, or ``stored`` when the caller has it), as
    the next GET reads it. ``linkage``: the linkage part of the tag, when read with ``stored``
    (``stored.load_stored_tagged``)."""
    if not etags_enabled(request):
        return None
    flush_session(request)
    tag = resource_etag(request, definition, stored if stored is not None else load_stored(request, definition, entity),
                        linkage if stored is not None else None)
    request.response.headers[RESOURCE_ETAG] = tag
    return tag


def tag_answer(request: Request, definition: Any, entity: Any, document: Any = None, stored: Any = None,
               linkage: bytes | None = None) -> None:
    """An answer whose data is ``entity``: its new tag in ``ETag`` and ``X-Resource-ETag``.
    ``document``: the answer's own document, built from the row read back (``stored``, when the
    caller has it). Without query parameters, and with ``links.self`` the resource's own URL, it is
    the document a plain GET answers (the same builder): both headers are then the digest of the
    bytes the renderer makes of it and of the linkage of its relationships (``linkage``, when read
    with ``stored``; else read now), as the tween tags that GET. Otherwise the tag is ``tag_owner``'s."""
    if not etags_enabled(request):
        return
    if document is not None and not request.query_string and document["links"].get("self") == document["data"]["links"]["self"]:
        flush_session(request)
        if linkage is None:
            linkage = read_linkage(request, definition, definition.id_key.value(entity))
        request.environ[RENDERED] = lambda request, body: _tag_resource(request, etag_of(body, linkage))
        return
    tag = tag_owner(request, definition, entity, stored, linkage)
    if tag is not None:
        request.response.headers["ETag"] = tag


def _tag_resource(request: Request, tag: str) -> None:
    headers = request.response.headers
    headers["ETag"] = headers[RESOURCE_ETAG] = tag


def tag_body(request: Request) -> None:
    """Give this (write) answer the ``ETag`` of its own bytes, as the tween gives a ``GET``'s."""
    if etags_enabled(request):
        request.environ[RENDERED] = _tag_own_bytes


def _tag_own_bytes(request: Request, body: bytes) -> None:
    request.response.headers["ETag"] = etag_of(body)


def _small_file(response: Any) -> bool:
    length = response.content_length
    return length is not None and length <= _MAX_FILE_BYTES


def _not_modified(response: Any) -> Response:
    headers = [(name, value) for name, value in response.headerlist if name.lower() in _KEPT_BY_304]
    return Response(status=304, headerlist=headers)


def etag_tween_factory(handler: Any, registry: Any) -> Any:
    """The tween (under CORS, over the exception views): ``ETag`` on reads, 304 when it matches."""

    def etag_tween(request: Request) -> Any:
        response = handler(request)
        if request.method not in ("GET", "HEAD"):
            return response  # a write answer's tags are made with its bytes (``tag_answer``, ``tag_body``)
        if response.status_int != 200:
            return response
        if not isinstance(response.app_iter, list) and not _small_file(response):
            return response  # a stream, or a file too large to read for a tag
        environ = request.environ
        etag = response.headers.get("ETag")
        if etag is None:
            etag = environ.get(_UNCHANGED)
            if etag is not None:  # ``unchanged`` found it named by ``If-None-Match``
                response.headerlist.append(("ETag", etag))
                return _not_modified(response)
            body = response.body
            if not body:
                return response
            etag = etag_of(body, environ.get(_LINKAGE, b""))
            key = environ.get(_KEY)
            if key is not None:  # built from what the key digests: its tag, for the next revalidation
                cast("BoundedCache", get_registry(request).etag_tags).put(key, etag)
            response.headerlist.append(("ETag", etag))  # (it has none: no lookup of the header names again)
        condition = environ.get("HTTP_IF_NONE_MATCH")
        if condition is not None and weak_match(parse_entity_tags(condition), etag.removeprefix("W/")):
            return _not_modified(response)
        return response

    return etag_tween
