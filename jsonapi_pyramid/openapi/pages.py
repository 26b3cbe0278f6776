"""Publishing the document: ``GET /<api>/openapi.json`` and the Swagger UI page ``GET /<api>/docs``."""
from __future__ import annotations

import importlib.util
import pathlib

from pyramid.response import FileResponse, Response
from pyramid.security import NO_PERMISSION_REQUIRED

from ..contract import ActionOrder, get_registry
from ..errors import NotFound, method_not_allowed_view
from ..security import Permission
from ..traversal import ApiRoot
from .common import _ASSETS, DOCS_VIEW, DOCUMENT_VIEW
from .document import get_document


def _swagger_ui_dir() -> pathlib.Path | None:
    """Swagger UI's files, from the optional ``swagger-ui-py`` (``jsonapi_pyramid[docs-ui]``)."""
    spec = importlib.util.find_spec("swagger_ui")
    if spec is None or not spec.submodule_search_locations:
        return None
    return pathlib.Path(next(iter(spec.submodule_search_locations))) / "static"


_NO_UI_PAGE = """<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>{title} reference</title></head>
<body>
<p>The API reference page needs Swagger UI's files, which are not installed:
<code>pip install 'jsonapi_pyramid[docs-ui]'</code>.</p>
<p>The OpenAPI document itself: <a href="{document}">{document}</a>.</p>
</body>
</html>
"""


_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title} reference</title>
<link rel="stylesheet" href="{assets}/swagger-ui.css">
<link rel="icon" type="image/png" href="{assets}/favicon-32x32.png">
</head>
<body>
<div id="swagger-ui"></div>
<script src="{assets}/swagger-ui-bundle.js"></script>
<script>
window.ui = SwaggerUIBundle({{
  url: "{document}",
  dom_id: "#swagger-ui",
  deepLinking: true,
  validatorUrl: null,
  defaultModelsExpandDepth: 0,
  docExpansion: "list"
}});
</script>
</body>
</html>
"""


def document_view(context, request):
    """``GET /<api>/openapi.json``: the OpenAPI document (``application/json``)."""
    get_document(request.registry)
    return Response(body=get_registry(request).openapi_bytes, content_type="application/json", charset=None)


def docs_view(context, request):
    """``GET /<api>/docs``: the Swagger UI page; ``/<api>/docs/<asset>``: its files."""
    static = _swagger_ui_dir()
    if request.subpath:
        name = "/".join(request.subpath)
        if name not in _ASSETS or static is None:
            raise NotFound(f"No documentation asset {name!r}.")
        response = FileResponse(str(static / name), request=request, cache_max_age=86400,
                                content_type=_ASSETS[name])
        return response
    document = get_document(request.registry)
    title = _html(document["info"]["title"])
    document_path = request.resource_path(context, DOCUMENT_VIEW)
    if static is None:  # without the docs-ui extra: say what is missing, link the document itself
        page = _NO_UI_PAGE.format(title=title, document=document_path)
    else:
        page = _PAGE.format(title=title, assets=request.resource_path(context, DOCS_VIEW), document=document_path)
    return Response(page, content_type="text/html", charset="utf-8")


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


_get_only = method_not_allowed_view(["GET", "HEAD"])


def includeme(config):
    """Register the document and the docs page as views of the ``api`` node, and build the
    document when the configuration commits (after every resource is resolved)."""
    for name, view in ((DOCUMENT_VIEW, document_view), (DOCS_VIEW, docs_view)):
        config.add_view(view, context=ApiRoot, name=name, request_method=("GET", "HEAD"), permission=Permission.VIEW)
        config.add_view(_get_only, context=ApiRoot, name=name, permission=NO_PERMISSION_REQUIRED)
    registry = config.registry
    config.action(("jsonapi", "openapi"), lambda: get_document(registry), order=ActionOrder.OPENAPI)
