"""Metrics and traces (CONTRACT.md section 11), with the extra ``jsonapi_pyramid[observability]``.

``config.include("jsonapi_pyramid")`` includes this; it does nothing unless asked:

* ``jsonapi.metrics = true``: ``GET /metrics`` in the Prometheus text format (``metrics.py``),
  answered to the addresses of ``jsonapi.metrics_allow`` (default ``127.0.0.1 ::1``; networks such
  as ``10.0.0.0/8`` too) and 404 to the others;
* ``OTEL_EXPORTER_OTLP_ENDPOINT`` (the OpenTelemetry SDK's variables) or the setting
  ``jsonapi.tracer_provider``: a span per request and per SQL statement (``tracing.py``).

Either adds one tween, under the access log, which times each request, labels it with its route
template (``routes.py``), counts its SQL statements (the dialect's execution events on the application's engines)
and pyramid_retry's attempts, and gives the access line the trace id. A request retried by
pyramid_retry is one request: one observation and one span over all its attempts.

An application counts its own throttled logins with ``count_login_throttled(request)``, which
does nothing when metrics are off (it imports nothing of the extra).
"""
from __future__ import annotations

import os
import time
from contextvars import ContextVar
from typing import Any

from pyramid.config import Configurator
from pyramid.exceptions import ConfigurationError
from pyramid.request import Request
from pyramid.security import NO_PERMISSION_REQUIRED
from pyramid.settings import asbool
from pyramid.tweens import EXCVIEW
from pyramid_retry import is_error_retryable
from sqlalchemy import event

from ..traversal import Root

__all__ = ["count_login_throttled", "includeme", "observability_tween_factory"]

_STATE = "jsonapi.observability"
#: the access line's trace id (``logging.py``)
TRACE_ID = "jsonapi.trace_id"
_SKIPPED = ("SAVEPOINT", "RELEASE", "ROLLBACK", "COMMIT", "BEGIN")


class _Request:
    """What one request (over all its attempts) has counted so far; kept in its environ."""

    __slots__ = ("context_token", "span", "started", "statements")

    def __init__(self, started: float) -> None:
        self.started = started
        self.statements = 0
        self.span: Any = None
        self.context_token: Any = None


class Observability:
    """The application's metrics and tracer, and the request being served on this thread."""

    def __init__(self, metrics: Any, provider: Any) -> None:
        self.metrics = metrics
        self.provider = provider  # the TracerProvider (its ``shutdown`` flushes the spans)
        self.tracer = tracer = None if provider is None else provider.get_tracer("jsonapi_pyramid")
        # per application, not per module: two applications in one process count apart
        self.current: ContextVar[_Request | None] = ContextVar(f"jsonapi_observability_{id(self)}", default=None)
        if tracer is not None:
            from .tracing import sql_span_end, sql_span_start

            self._span_start, self._span_end = sql_span_start, sql_span_end

    # The dialect's execution events (``do_execute`` & co.), not the engine's
    # ``before_cursor_execute``: a listener on the engine turns on SQLAlchemy's event path for
    # every statement, transaction and connection of the engine (~4 % of S1's instructions, more
    # than everything else here together); the dialect's are only looked at around the cursor call.

    def do_execute(self, cursor: Any, statement: str, parameters: Any, context: Any) -> bool:
        return self._statement(context, statement, context.dialect.do_execute, (cursor, statement, parameters, context))

    def do_executemany(self, cursor: Any, statement: str, parameters: Any, context: Any) -> bool:
        return self._statement(context, statement, context.dialect.do_executemany, (cursor, statement, parameters, context))

    def do_execute_no_params(self, cursor: Any, statement: str, context: Any) -> bool:
        return self._statement(context, statement, context.dialect.do_execute_no_params, (cursor, statement, context))

    def driver_statement(self) -> bool:
        """Count a kept statement the library runs on the driver (``connection.execute``), a
        SELECT; False (not counted) when a span would record it: then SQLAlchemy runs it."""
        state = self.current.get()
        if state is None:
            return True
        if state.span is not None and state.span.is_recording():
            return False
        state.statements += 1
        return True

    def _statement(self, context: Any, statement: str, execute: Any, arguments: tuple[Any, ...]) -> bool:
        """Counts the statement; with a recording span, runs it in a child span (True: it ran)."""
        state = self.current.get()
        if state is None:
            return False  # a statement outside a request (start-up, a script)
        if not statement.lstrip()[:9].upper().startswith(_SKIPPED):
            state.statements += 1
        span = state.span
        if span is None or not span.is_recording():
            return False  # SQLAlchemy runs it
        child = self._span_start(self.tracer, span, context, statement)
        try:
            execute(*arguments)
        except BaseException as exc:
            self._span_end(child, exc)
            raise
        self._span_end(child, None)
        return True


def count_login_throttled(request: Request) -> None:
    """Count one login refused by a throttle (``jsonapi_login_throttled_total``)."""
    observability = request.registry.get(_STATE)
    if observability is not None and observability.metrics is not None:
        observability.metrics.login_throttled.inc()


def observability_tween_factory(handler: Any, registry: Any) -> Any:
    """Times, labels and counts each request; its span when tracing is on."""
    from .routes import method_label, route_template

    observability: Observability = registry[_STATE]
    metrics, tracer, current = observability.metrics, observability.tracer, observability.current
    if tracer is not None:
        from .tracing import attach, detach, end_request_span, start_request_span

    def observability_tween(request: Request) -> Any:
        environ = request.environ
        state = environ.get(_STATE)
        if state is None:  # the first attempt (pyramid_retry's next ones share the environ)
            state = environ[_STATE] = _Request(time.perf_counter())
            if tracer is not None:
                state.span = start_request_span(tracer, environ, method_label(request.method))
                environ[TRACE_ID] = format(state.span.get_span_context().trace_id, "032x")
        token = current.set(state)
        if state.span is not None:
            state.context_token = attach(state.span)
        try:
            response = handler(request)
        except Exception as exc:
            _done(request, state, 500, exc)
            raise
        finally:
            if state.span is not None:
                detach(state.context_token)
            current.reset(token)
        _done(request, state, response.status_int, getattr(request, "exception", None))
        return response

    def _done(request: Request, state: _Request, status: int, exc: BaseException | None) -> None:
        if exc is not None and is_error_retryable(request, exc):
            if metrics is not None:
                metrics.retries.inc()
            return  # pyramid_retry runs it again: observed when its last attempt is done
        method, route = method_label(request.method), route_template(request)
        if metrics is not None:
            metrics.observe(method, route, status, time.perf_counter() - state.started, state.statements)
        if state.span is not None:
            end_request_span(state.span, method, route, status, exc)

    return observability_tween


def _listen(pyramid_registry: Any, observability: Observability) -> None:
    """The statement events on the application's engines (made by ``jsonapi_pyramid.db`` or the application)."""
    for key in ("db.engine", "db.read_engine"):
        engine = pyramid_registry.get(key)
        if engine is not None:
            for name in ("do_execute", "do_executemany", "do_execute_no_params"):
                event.listen(engine, name, getattr(observability, name))


def _traces_requested(environ: Any) -> bool:
    """Whether the OpenTelemetry SDK's variables ask for traces to be exported."""
    if asbool(environ.get("OTEL_SDK_DISABLED", "false")) or environ.get("OTEL_TRACES_EXPORTER", "otlp") == "none":
        return False
    return bool(environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))


def _observability(settings: Any, pyramid_registry: Any) -> Observability | None:
    provider = settings["tracer_provider"]
    if not settings["metrics"] and provider is None and not _traces_requested(os.environ):
        return None  # nothing asked for: the extra need not be installed
    try:
        metrics = None
        if settings["metrics"]:
            from .metrics import Metrics, parse_allowed

            metrics = Metrics(pyramid_registry, parse_allowed(settings["metrics_allow"]))
        if provider is None and _traces_requested(os.environ):
            from .tracing import provider_from_environment

            provider = provider_from_environment()
    except ImportError as exc:
        raise ConfigurationError(f"jsonapi.metrics and OpenTelemetry traces need the extra "
                                 f"jsonapi_pyramid[observability] ({exc})") from None
    return Observability(metrics, provider)


def includeme(config: Configurator) -> None:
    """``/metrics`` and the tween, when ``jsonapi.metrics`` or tracing is on; else nothing."""
    observability = _observability(config.jsonapi_registry().settings, config.registry)
    if observability is None:
        return
    config.registry[_STATE] = observability
    if observability.metrics is not None:
        from .metrics import metrics_view

        config.add_view(metrics_view, context=Root, name="metrics", request_method=("GET", "HEAD"),
                        permission=NO_PERMISSION_REQUIRED)
    # Outside everything but the access log: it sees CORS answers, 304s, errors and every attempt.
    config.add_tween("jsonapi_pyramid.observability.observability_tween_factory",
                     under="jsonapi_pyramid.logging.access_log_tween_factory",
                     over=("jsonapi_pyramid.cors.cors_tween_factory", EXCVIEW))
    config.action(("jsonapi", "observability-engines"), lambda: _listen(config.registry, observability))
