"""Health answers for load balancers and orchestrators (registered by ``db.py``).

``GET /health`` (outside the ``/api`` tree, no authentication) answers 200
``{"status": "ok", "database": "ok", "writable": true}`` when the database answers (``writable``:
false when it is a read-only standby) and 503 otherwise, as ``application/json``, for
orchestrators and monitoring (readiness). With ``db.read_url`` (``replicas.py``) it also reports
``replica``. ``GET /health/live`` (liveness, for load balancers) answers 200 ``{"status": "ok"}``
without touching the database: a process is kept in service while the database is unreachable
(during a failover every process shares that state, and reads may still be served by the
replicas), and its answer is as fast as the process itself.
"""
from __future__ import annotations

import logging
from typing import Any

import orjson
from pyramid.config import Configurator
from pyramid.httpexceptions import HTTPNotFound
from pyramid.request import Request
from pyramid.response import Response
from pyramid.security import NO_PERMISSION_REQUIRED
from sqlalchemy import text

from .traversal import Root

__all__ = ["health_view"]

log = logging.getLogger(__name__)


def health_view(request: Request) -> Any:
    """``GET /health``: whether the database answers and takes writes (200 or 503), as plain JSON;
    ``GET /health/live``: that the process answers (200), without a statement."""
    if request.subpath:
        if request.subpath != ("live",):
            raise HTTPNotFound()
        return _health_response({"status": "ok"}, 200, {})
    writable = _writable(request.registry["db.engine"])
    body: dict[str, Any]
    if writable is None:
        body, status, headers = {"status": "unavailable", "database": "unavailable"}, 503, {"Retry-After": "5"}
    else:
        body, status, headers = {"status": "ok", "database": "ok", "writable": writable}, 200, {}
    read_engine = request.registry.get("db.read_engine")
    if read_engine is not None:
        body["replica"] = "unavailable" if _writable(read_engine) is None else "ok"
    return _health_response(body, status, headers)


def _health_response(body: dict[str, Any], status: int, headers: dict[str, str]) -> Response:
    response = Response(status=status, body=orjson.dumps(body), content_type="application/json", charset=None)
    response.headers.update(headers)
    response.cache_control = "no-store"
    return response


def _writable(engine: Any) -> bool | None:
    """Whether ``engine``'s database takes writes; None when it does not answer. One statement."""
    query = "SELECT NOT pg_is_in_recovery()" if engine.dialect.name == "postgresql" else "SELECT 1"
    try:
        with engine.connect() as connection:
            return bool(connection.execute(text(query)).scalar())
    except Exception as exc:  # noqa: BLE001 - any failure means "not healthy"
        log.warning("health check: database unavailable (%s): %s", engine.url.host, exc.__class__.__name__)
        return None


def includeme(config: Configurator) -> None:
    """``GET /health`` and ``GET /health/live`` on the root (``config.include("jsonapi_pyramid.db")``)."""
    config.add_view(health_view, context=Root, name="health", request_method=("GET", "HEAD"),
                    permission=NO_PERMISSION_REQUIRED)
