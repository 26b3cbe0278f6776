"""Access log: one line per request on the logger ``jsonapi_pyramid.access``, and ``X-Request-Id``.

``config.include("jsonapi_pyramid")`` adds the tween (outermost, over pyramid_tm when present).
Each request is logged once, at INFO, when its response is final, in ``key=value`` form::

    method=POST path=/api/articles status=201 duration_ms=12.4 request_id=3f2a... attempts=1 remote=10.0.0.7

With tracing on (``observability``) the line ends with the request's ``trace_id=`` (32 hex digits).

``request_id`` is the id that error documents carry in ``errors[].id`` and that the traceback of a
500 is logged under (``errors.internal_error_view``), and the response's ``X-Request-Id`` header:
an operator greps the log for the id a client reports. A client or proxy may send its own
``X-Request-Id`` (at most 64 letters, digits and dashes); otherwise the service makes one.
A request that pyramid_retry repeats keeps its id; ``duration_ms`` covers every attempt, and the
attempts it discarded are logged at DEBUG only.
"""
from __future__ import annotations

import json
import logging
import re
import time
from typing import Any, cast

from pyramid.config import Configurator
from pyramid.request import Request
from pyramid.tweens import EXCVIEW, INGRESS
from pyramid_retry import is_error_retryable

__all__ = ["access_log", "access_log_tween_factory", "format_fields"]

#: The logger of the access lines.
access_log = logging.getLogger("jsonapi_pyramid.access")

_STARTED = "jsonapi.access.started"
_PLAIN = re.compile(r"[\x21-\x7e]+")


def _value(value: Any) -> str:
    text = str(value)
    if _PLAIN.fullmatch(text) and '"' not in text and "\\" not in text:
        return text
    return json.dumps(text)  # quoted, with spaces, quotes and control characters escaped


def format_fields(fields: dict[Any, Any]) -> str:
    """``key=value`` pairs; values with spaces, quotes or other than printable ASCII are JSON-quoted."""
    return " ".join(f"{key}={_value(value)}" for key, value in fields.items())


def _raw_path(environ: Any) -> str:
    # The path as the client sent it; PEP 3333 hands it over as latin-1, so undecodable UTF-8
    # (which request.path would choke on) is logged escaped instead of failing the log line.
    raw = (environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", "")).encode("latin-1", "replace")
    return cast("str", raw.decode("utf-8", "backslashreplace")[:2000])


def access_log_tween_factory(handler: Any, registry: Any) -> Any:
    """The tween: times the request, sets ``X-Request-Id``, writes the access line."""

    def access_log_tween(request: Request) -> Any:
        environ = request.environ
        started = environ.setdefault(_STARTED, time.perf_counter())
        request_id = request.request_id
        try:
            response = handler(request)
        except Exception as exc:
            # Nothing rendered it (no exception view matched): the server answers 500, unless
            # pyramid_retry runs the request again.
            if is_error_retryable(request, exc):
                _log(request, environ, started, 500, request_id, logging.DEBUG, retried="yes")
            else:
                _log(request, environ, started, 500, request_id, logging.INFO)
            raise
        rendered = getattr(request, "exception", None)
        if rendered is not None and is_error_retryable(request, rendered):
            _log(request, environ, started, response.status_int, request_id, logging.DEBUG, retried="yes")
        else:
            _log(request, environ, started, response.status_int, request_id, logging.INFO)
        response.headers["X-Request-Id"] = request_id
        return response

    return access_log_tween


def _log(request: Request, environ: Any, started: Any, status: Any, request_id: Any, level: Any, **extra: Any) -> None:
    if not access_log.isEnabledFor(level):
        return
    # ``format_fields``' line, written out: the status, the duration, the request id (checked or
    # made by ``request_id``) and the attempts are plain by construction; the rest is quoted as needed.
    line = (f"method={_value(environ.get('REQUEST_METHOD', '-'))} path={_value(_raw_path(environ) or '/')} "
            f"status={status} duration_ms={(time.perf_counter() - started) * 1000:.1f} request_id={request_id} "
            f"attempts={environ.get('retry.attempt', 0) + 1} remote={_value(environ.get('REMOTE_ADDR', '-'))}")
    trace_id = environ.get("jsonapi.trace_id")  # with tracing on (observability)
    if trace_id is not None:
        line = f"{line} trace_id={trace_id}"
    if extra:
        line = f"{line} {format_fields(extra)}"
    access_log.log(level, "%s", line)


def includeme(config: Configurator) -> None:
    """Add the access log tween above every other tween of the library and of pyramid_tm."""
    config.add_tween("jsonapi_pyramid.logging.access_log_tween_factory", under=INGRESS,
                     over=("jsonapi_pyramid.db.transient_error_tween_factory", "pyramid_tm.tm_tween_factory", EXCVIEW))
