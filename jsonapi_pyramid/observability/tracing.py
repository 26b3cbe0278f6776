"""OpenTelemetry traces: a span per request, a child span per SQL statement.

On when the SDK's own environment variables ask for an exporter (``OTEL_EXPORTER_OTLP_ENDPOINT``
or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``; ``OTEL_SDK_DISABLED=true`` or ``OTEL_TRACES_EXPORTER=none``
turn it off: ``__init__.py``), or when the application hands in its own ``TracerProvider`` as the setting
``jsonapi.tracer_provider`` (tests use the SDK's in-memory exporter that way). The provider is the
application's, not the process-wide one: ``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES`` and
``OTEL_TRACES_SAMPLER`` apply as the SDK reads them; spans go out over OTLP/HTTP in batches.

The request's span is named ``<method> <route template>`` (``routes.py``), with the HTTP semantic
conventions' attributes, and continues the caller's ``traceparent`` (the propagators of
``OTEL_PROPAGATORS``, W3C trace context by default). The statements are timed around the cursor
call by the dialect's execution events (``do_execute`` and its siblings) on the application's
engines, whichever connection of the request runs them; opentelemetry-instrumentation-sqlalchemy does the
same with the process-wide provider, which two applications in one process could not tell apart.
"""
from __future__ import annotations

import os
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.propagators.textmap import Getter
from opentelemetry.trace import SpanKind, Status, StatusCode
from pyramid.exceptions import ConfigurationError

__all__ = ["attach", "detach", "end_request_span", "provider_from_environment", "sql_span_end", "sql_span_start",
           "start_request_span"]

def provider_from_environment() -> Any:
    """A ``TracerProvider`` exporting over OTLP/HTTP as the SDK's variables say."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    protocol = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
    if protocol != "http/protobuf":
        raise ConfigurationError(f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol}: the observability extra exports over http/protobuf only")
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider


class _EnvironGetter(Getter[Any]):
    """Headers of a WSGI environ for the propagators (``traceparent`` is ``HTTP_TRACEPARENT``)."""

    def get(self, carrier: Any, key: str) -> list[str] | None:
        value = carrier.get("HTTP_" + key.upper().replace("-", "_"))
        return None if value is None else [value]

    def keys(self, carrier: Any) -> list[str]:
        return [key[5:].lower().replace("_", "-") for key in carrier if key.startswith("HTTP_")]


_GETTER = _EnvironGetter()


def start_request_span(tracer: Any, environ: Any, method: str) -> Any:
    """The request's span, a child of the caller's ``traceparent`` when it sent one."""
    parent = propagate.extract(environ, getter=_GETTER)
    attributes = {
        "http.request.method": method,
        "url.path": environ.get("PATH_INFO", "/") or "/",
        "url.scheme": environ.get("wsgi.url_scheme", "http"),
        "network.protocol.version": environ.get("SERVER_PROTOCOL", "HTTP/1.1").rpartition("/")[2],
    }
    host = environ.get("HTTP_HOST") or environ.get("SERVER_NAME", "")
    server, separator, port = host.rpartition(":")
    if not (separator and port.isdigit()):  # no port in Host (or an IPv6 address without one)
        server, port = host, environ.get("SERVER_PORT", "")
    if server:
        attributes["server.address"] = server
    if port:
        attributes["server.port"] = int(port)
    optional = (("url.query", "QUERY_STRING"), ("client.address", "REMOTE_ADDR"), ("user_agent.original", "HTTP_USER_AGENT"))
    for name, key in optional:
        if environ.get(key):
            attributes[name] = environ[key]
    return tracer.start_span(method, context=parent, kind=SpanKind.SERVER, attributes=attributes)


def end_request_span(span: Any, method: str, route: str, status: int, exc: BaseException | None) -> None:
    if route.startswith("/"):
        span.update_name(f"{method} {route}")
        span.set_attribute("http.route", route)
    span.set_attribute("http.response.status_code", status)
    if status >= 500:
        span.set_attribute("error.type", type(exc).__qualname__ if exc is not None else str(status))
        span.set_status(Status(StatusCode.ERROR))
    span.end()


def attach(span: Any) -> Any:
    """Make ``span`` the current one (for the application's own spans); returns the token to detach."""
    return otel_context.attach(trace.set_span_in_context(span))


def detach(token: Any) -> None:
    otel_context.detach(token)


def sql_span_start(tracer: Any, parent: Any, context: Any, statement: str) -> Any:
    """A child span of ``parent`` for one statement (``context``: SQLAlchemy's execution
    context), named after its operation (``SELECT``)."""
    operation = statement.lstrip().split(None, 1)[0].upper() if statement.strip() else "SQL"
    engine_url = context.root_connection.engine.url
    attributes: dict[str, Any] = {
        "db.system.name": context.dialect.name,
        "db.operation.name": operation,
        "db.query.text": statement,
    }
    if engine_url.database:
        attributes["db.namespace"] = engine_url.database
    if engine_url.host:
        attributes["server.address"] = engine_url.host
        if engine_url.port:
            attributes["server.port"] = engine_url.port
    return tracer.start_span(operation, context=trace.set_span_in_context(parent), kind=SpanKind.CLIENT,
                             attributes=attributes)


def sql_span_end(span: Any, error: BaseException | None = None) -> None:
    if error is not None:
        span.set_attribute("error.type", type(error).__qualname__)
        span.set_status(Status(StatusCode.ERROR))
    span.end()
