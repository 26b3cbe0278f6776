"""The floor: the ceiling's Pyramid (URL dispatch, one plain view) under the same waitress,
answering ``/__floor__/<status>/<size>`` with a constant body of ``size`` bytes (built once per
size). What the project adds over it is everything but the HTTP server and the framework's
minimum: query parsing, SQL, documents, serialization, its tweens.
"""
from __future__ import annotations

from pyramid.config import Configurator
from pyramid.response import Response

MEDIA = "application/vnd.api+json"


class Counter:
    statements = 0  # the floor runs no SQL


def constant(request):
    status, size = int(request.matchdict["status"]), int(request.matchdict["size"])
    bodies = request.registry["bodies"]
    body = bodies.get(size)
    if body is None:  # once per size: a JSON document of exactly ``size`` bytes
        body = bodies[size] = b'{"pad":"' + b"x" * max(0, size - 10) + b'"}' if size >= 10 else b" " * size
    if status == 304:
        return Response(status=304)
    return Response(body=body, status=status, content_type=MEDIA, charset=None)


def make_app(url: str | None = None):
    """The WSGI app and its (empty) statement counter; ``url`` is ignored."""
    with Configurator() as config:
        config.registry["bodies"] = {}
        config.add_route("floor", "/__floor__/{status}/{size}")
        config.add_view(constant, route_name="floor")
    return config.make_wsgi_app(), Counter()
