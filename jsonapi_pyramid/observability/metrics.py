"""The Prometheus metrics of one application (CONTRACT.md section 11), and ``GET /metrics``.

Each application has its own ``prometheus_client.CollectorRegistry`` (on the Pyramid registry,
``registry["jsonapi.metrics"]``), so two applications in one process never mix their counts.
The names and labels are the OpenTelemetry semantic conventions' (``http.server.request.duration``
becomes ``http_server_request_duration_seconds``), so dashboards made for other services apply.
"""
from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from pyramid.exceptions import ConfigurationError
from pyramid.httpexceptions import HTTPNotFound
from pyramid.request import Request
from pyramid.response import Response

__all__ = ["LABELS", "Metrics", "metrics_view", "parse_allowed"]

#: the Prometheus text format (what ``generate_latest`` writes), whatever the ``Accept``
TEXT_FORMAT = "text/plain; version=0.0.4; charset=utf-8"
LABELS = ("http_request_method", "http_route", "http_response_status_code")
#: the semantic conventions' advice for ``http.server.request.duration``, in seconds
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)
STATEMENT_BUCKETS = (0, 1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 50, 100)
#: the engines whose pools are reported, by their registry key, under the pool name
POOLS = (("db.engine", "primary"), ("db.read_engine", "replica"))


class _PoolCollector:
    """``db_client_connection_count``: the pools' connections in use and idle, read at scrape time."""

    def __init__(self, pyramid_registry: Any) -> None:
        self.pyramid_registry = pyramid_registry

    def describe(self) -> list[Any]:
        return []

    def collect(self) -> Iterator[Any]:
        family = GaugeMetricFamily(
            "db_client_connection_count", "Connections of the database pool, by state (used: checked out by a request)",
            labels=("db_client_connection_pool_name", "db_client_connection_state"))
        for key, name in POOLS:
            engine = self.pyramid_registry.get(key)
            pool = getattr(engine, "pool", None)
            if pool is None or not hasattr(pool, "checkedout"):
                continue  # a pool without a count (SQLite's in-memory pools)
            family.add_metric((name, "used"), pool.checkedout())
            family.add_metric((name, "idle"), pool.checkedin())
        yield family


class Metrics:
    """The application's metrics; ``observe`` once per request."""

    def __init__(self, pyramid_registry: Any, allowed: tuple[Any, ...]) -> None:
        self.allowed = allowed
        self.registry = CollectorRegistry(auto_describe=False)
        self.duration = Histogram("http_server_request_duration_seconds", "Duration of HTTP server requests",
                                  LABELS, registry=self.registry, buckets=DURATION_BUCKETS)
        self.statements = Histogram("jsonapi_sql_statements_per_request", "SQL statements a request ran",
                                    LABELS, registry=self.registry, buckets=STATEMENT_BUCKETS)
        self.retries = Counter("jsonapi_retries", "Attempts pyramid_retry ran again after a transient database error",
                               registry=self.registry)
        self.login_throttled = Counter("jsonapi_login_throttled", "Logins refused by the throttle (429)",
                                       registry=self.registry)
        self.registry.register(_PoolCollector(pyramid_registry))
        self._children: dict[tuple[str, str, str], tuple[Any, Any]] = {}

    def observe(self, method: str, route: str, status: int, seconds: float, statements: int) -> None:
        key = (method, route, str(status))
        children = self._children.get(key)
        if children is None:  # labels() looks the series up under a lock: once per series
            children = self._children[key] = (self.duration.labels(*key), self.statements.labels(*key))
        children[0].observe(seconds)
        children[1].observe(statements)

    def allows(self, address: str | None) -> bool:
        try:
            parsed = ipaddress.ip_address(address or "")
        except ValueError:
            return False
        return any(parsed in network for network in self.allowed)


def parse_allowed(text: str) -> tuple[Any, ...]:
    """``jsonapi.metrics_allow``: addresses or networks (``10.0.0.0/8``), separated by blanks."""
    try:
        return tuple(ipaddress.ip_network(item, strict=False) for item in text.split())
    except ValueError as exc:
        raise ConfigurationError(f"jsonapi.metrics_allow: {exc}") from None


def metrics_view(request: Request) -> Response:
    """``GET /metrics``: the text format, to the allowed addresses only (404 to the others)."""
    metrics: Metrics = request.registry["jsonapi.observability"].metrics
    if not metrics.allows(request.remote_addr):
        raise HTTPNotFound()
    response = Response(body=generate_latest(metrics.registry), content_type="text/plain", charset="utf-8")
    response.headers["Content-Type"] = TEXT_FORMAT
    response.cache_control = "no-store"
    return response
