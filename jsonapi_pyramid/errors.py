"""JSON:API errors: the exceptions the library raises and the exception views that render them.

Raise a ``JsonApiError`` subclass anywhere in a request (traversal, parsing, validation, a view or
an application's operation); the exception view turns it into an error document with the right
status. Pyramid's own HTTP exceptions (404 from traversal, 403 from the security policy) and any
unexpected exception are rendered as JSON:API documents too; a 500 never shows a traceback or SQL:
those go to the server log under the same ``errors[].id`` the client sees.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from typing import Any, cast
from urllib.parse import quote, unquote_to_bytes

from pyramid.config import Configurator
from pyramid.exceptions import URLDecodeError
from pyramid.httpexceptions import HTTPException, HTTPForbidden, HTTPNotFound
from pyramid.request import Request
from sqlalchemy.exc import DataError, DBAPIError, IntegrityError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.orm.exc import StaleDataError

from .deadlines import statement_timed_out
from .renderer import json_response

__all__ = [
    "BadRequest",
    "Conflict",
    "Forbidden",
    "JsonApiError",
    "MethodNotAllowed",
    "NotAcceptable",
    "NotFound",
    "PayloadTooLarge",
    "ServiceUnavailable",
    "Unauthorized",
    "UnsupportedMediaType",
    "ValidationFailed",
    "error_object",
]

log = logging.getLogger(__name__)


def error_object(status: int, title: str, detail: str | None = None, *, pointer: str | None = None,
                 parameter: str | None = None, header: str | None = None, code: str | None = None,
                 meta: dict[Any, Any] | None = None) -> dict[Any, Any]:
    """One member of ``errors``."""
    error: dict[str, Any] = {"status": str(status), "title": title}
    if code:
        error["code"] = code
    if detail:
        error["detail"] = detail
    source: dict[str, str] = {}
    if pointer is not None:
        source["pointer"] = pointer
    if parameter is not None:
        source["parameter"] = parameter
    if header is not None:
        source["header"] = header
    if source:
        error["source"] = source
    if meta:
        error["meta"] = meta
    return error


class JsonApiError(Exception):
    """An error that becomes a JSON:API error document with ``status``.

    Give one error through the keyword arguments, or several through ``errors`` (each made with
    ``error_object``); ``headers`` are added to the response.
    """

    status = 500
    title = "Internal Server Error"

    def __init__(self, detail: str | None = None, *, pointer: str | None = None, parameter: str | None = None,
                 header: str | None = None, code: str | None = None, title: str | None = None,
                 errors: Iterable[dict[Any, Any]] | None = None, headers: dict[Any, Any] | None = None,
                 meta: dict[Any, Any] | None = None) -> None:
        super().__init__(detail or title or self.title)
        self.headers = dict(headers or {})
        if errors is not None:
            self.errors = list(errors)
        else:
            self.errors = [error_object(self.status, title or self.title, detail, pointer=pointer,
                                        parameter=parameter, header=header, code=code, meta=meta)]


class BadRequest(JsonApiError):
    status, title = 400, "Bad Request"


class Unauthorized(JsonApiError):
    status, title = 401, "Unauthorized"

    def __init__(self, detail: str | None = "Valid credentials are required for this operation.", **kw: Any) -> None:
        super().__init__(detail, **kw)
        self.headers.setdefault("WWW-Authenticate", 'Bearer realm="api"')


class Forbidden(JsonApiError):
    status, title = 403, "Forbidden"


class NotFound(JsonApiError):
    status, title = 404, "Not Found"


class MethodNotAllowed(JsonApiError):
    status, title = 405, "Method Not Allowed"

    def __init__(self, method: str, allowed: Iterable[str]) -> None:
        allowed = sorted(set(allowed))
        super().__init__(f"{method} is not allowed here; allowed: {', '.join(allowed)}.",
                         headers={"Allow": ", ".join(allowed)})


def method_not_allowed_view(allowed: Any) -> Any:
    """The one kind of 405 view: registered without a ``request_method`` predicate beside the
    views of a context (or a named view), it answers every other method with 405 and ``Allow``.
    ``allowed``: the methods, or ``(context, request) -> methods`` when they are known only at
    request time (custom operations)."""

    def method_not_allowed(context: Any, request: Request) -> None:
        if is_preflight(request):  # the CORS tween answers every preflight when CORS is on
            raise refused_preflight(request, "CORS is off (jsonapi.cors_origins is empty)")
        raise MethodNotAllowed(request.method, allowed(context, request) if callable(allowed) else allowed)

    return method_not_allowed


def is_preflight(request: Request) -> bool:
    """A browser's CORS preflight: ``OPTIONS`` with ``Origin`` and ``Access-Control-Request-Method``."""
    headers = request.headers
    return request.method == "OPTIONS" and "Origin" in headers and "Access-Control-Request-Method" in headers


def refused_preflight(request: Request, reason: str) -> JsonApiError:
    """403 for a preflight from an origin that may not call the API, saying why (``reason``). It
    carries no CORS header, so the browser does not send the real request."""
    return Forbidden(f"The origin {request.headers['Origin']} may not call this API from a browser page: {reason}.",
                     header="Origin")


class NotAcceptable(JsonApiError):
    status, title = 406, "Not Acceptable"


class Conflict(JsonApiError):
    status, title = 409, "Conflict"


class PayloadTooLarge(JsonApiError):
    status, title = 413, "Payload Too Large"


class UnsupportedMediaType(JsonApiError):
    status, title = 415, "Unsupported Media Type"


class ValidationFailed(JsonApiError):
    """422 with one error per failed rule (seed section 7.2)."""

    status, title = 422, "Validation Error"

    def __init__(self, failures: Iterable[tuple[str, str]]) -> None:
        """``failures``: (pointer, message) pairs."""
        super().__init__(errors=[error_object(422, "Validation Error", message, pointer=pointer)
                                 for pointer, message in failures])


class ServiceUnavailable(JsonApiError):
    status, title = 503, "Service Unavailable"


# -- rendering ---------------------------------------------------------------------------------

def error_response(request: Request, status: int, errors: list[dict[Any, Any]], headers: dict[Any, Any] | None = None) -> Any:
    request_id = getattr(request, "request_id", None)
    if request_id:
        # Each occurrence its own id: the request id (X-Request-Id, in the access line) alone, or
        # followed by the error's position when the request failed in several ways (a 422).
        if len(errors) == 1:
            errors[0].setdefault("id", request_id)
        else:
            for position, error in enumerate(errors):
                error.setdefault("id", f"{request_id}-{position}")
    document = {"jsonapi": {"version": "1.1"}, "errors": errors, "links": {"self": _self_link(request)}}
    request.add_finished_callback(_drop_traceback)
    return json_response(document, status=status, headers=headers)


def _drop_traceback(request: Request) -> None:
    """Once the request is finished, the traceback of the exception its error answered goes:
    Pyramid keeps the exception (``request.exception``) and its ``exc_info`` on the request, and the
    traceback's frames hold the request, a cycle (with everything hanging from the request) left to
    the garbage collector at the end of every such request. ``request.exception`` stays (pyramid_retry
    reads it after the finished callbacks), without its traceback, nor those of its causes."""
    request.__dict__.pop("exc_info", None)
    exception = request.__dict__.get("exception")
    while exception is not None and exception.__traceback__ is not None:
        exception.__traceback__ = None
        exception = exception.__cause__ or exception.__context__


def _self_link(request: Request) -> str:
    try:
        return cast("str", request.url)
    except UnicodeDecodeError:  # a path or query that is not UTF-8: link to the raw bytes, escaped
        environ = request.environ
        raw = (environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", "")).encode("latin-1", "replace")
        url = request.host_url + quote(raw, safe="/")
        query = environ.get("QUERY_STRING", "").encode("latin-1", "replace")
        return cast("str", url + ("?" + quote(query, safe="=&[]%,") if query else ""))


def url_decode_error_view(exc: UnicodeDecodeError, request: Request) -> Any:
    """A path or query string that is not UTF-8 (pyramid's URLDecodeError, webob's decoding): 400.

    Any other UnicodeDecodeError is a bug: 500."""
    if url_is_utf8(request.environ):
        return internal_error_view(exc, request)
    return error_response(request, 400, [error_object(400, "Bad Request", "The URL is not valid UTF-8.")])


def url_is_utf8(environ: Any) -> bool:
    """Whether the path and the query string (as PEP 3333 hands them over) decode as UTF-8."""
    path, query_text = environ.get("PATH_INFO", ""), environ.get("QUERY_STRING", "")
    if path.isascii() and query_text.isascii() and "%" not in query_text:
        return True  # ASCII is UTF-8, and nothing is percent-encoded (the usual request, checked without a call)
    try:
        path.encode("latin-1").decode("utf-8")  # the server unquoted it
        query = query_text.encode("latin-1")
        query.decode("utf-8")
        unquote_to_bytes(query).decode("utf-8")
    except UnicodeError:
        return False
    return True


def jsonapi_error_view(exc: JsonApiError, request: Request) -> Any:
    return error_response(request, exc.status, exc.errors, exc.headers)


def not_found_view(exc: Any, request: Request) -> Any:
    return error_response(request, 404, [error_object(404, "Not Found", "No resource at this URL.")])


def forbidden_view(exc: Any, request: Request) -> Any:
    """Pyramid denied a permission: 401 when the caller is anonymous, 403 when it is known."""
    if request.authenticated_userid is None:
        raise_as = Unauthorized()
        return error_response(request, 401, raise_as.errors, raise_as.headers)
    return error_response(request, 403, [error_object(403, "Forbidden", "You may not perform this operation.")])


def http_exception_view(exc: HTTPException, request: Request) -> Any:
    headers = {k: v for k, v in exc.headers.items() if k.lower() in {"allow", "www-authenticate", "retry-after", "location"}}
    return error_response(request, exc.code, [error_object(exc.code, exc.title, exc.detail or None)], headers)


def integrity_error_view(exc: IntegrityError, request: Request) -> Any:
    """A constraint the validation could not see coming (a concurrent writer won): 409."""
    log.info("integrity error answered with 409: %s", exc.orig)
    detail = "The change conflicts with the current state of a resource (a unique or referential constraint)."
    return error_response(request, 409, [error_object(409, "Conflict", detail)])


def stale_data_view(exc: StaleDataError, request: Request) -> Any:
    """A row or link changed by a concurrent writer between read and write (after the retries): 409."""
    log.info("concurrent modification answered with 409: %s", exc)
    return error_response(request, 409, [error_object(409, "Conflict", "A concurrent request changed the same resource; try again.")])


def data_error_view(exc: DataError, request: Request) -> Any:
    """A value the database refuses (too long, out of range, a NUL character in text): 400."""
    log.info("data error answered with 400: %s", exc.orig)
    detail = "A value in the request is not acceptable to the database (too long, out of range, or containing a NUL character)."
    return error_response(request, 400, [error_object(400, "Bad Request", detail)])


def database_unavailable_view(exc: DBAPIError, request: Request) -> Any:
    if statement_timed_out(exc):
        log.warning("statement cancelled by jsonapi.statement_timeout_ms (request id %s): %s",
                    getattr(request, "request_id", "-"), str(exc.orig).strip().splitlines()[0])
        detail = "The request took longer than the service allows; try again later."
        return error_response(request, 503, [error_object(503, "Service Unavailable", detail)], {"Retry-After": "5"})
    if exc.connection_invalidated or (isinstance(exc, OperationalError) and _unreachable(exc.orig)):
        log.warning("database unavailable: %s", exc.orig)
        detail = "The database is not reachable; try again shortly."
        return error_response(request, 503, [error_object(503, "Service Unavailable", detail)], {"Retry-After": "5"})
    missing = _missing_from_schema(exc.orig)
    if missing is not None:  # the migrations were not run: say so to the operator, not to the client
        log.error("%s does not exist (request id %s): the database is behind the application's models; run the "
                  "database migrations (alembic upgrade head), or create the tables", missing,
                  getattr(request, "request_id", "-"), exc_info=exc)
        return _internal_error(request)
    return internal_error_view(exc, request)


#: What SQLite and PostgreSQL say of a table or column that is not there.
_MISSING = (
    (re.compile(r"no such table: (\S+)"), "the table {}"),
    (re.compile(r'column "([^"]+)" of relation "([^"]+)" does not exist'), "the column {1}.{0}"),
    (re.compile(r'relation "([^"]+)" does not exist'), "the table {}"),
    (re.compile(r"no such column: (\S+)"), "the column {}"),
    (re.compile(r"table (\S+) has no column named (\S+)"), "the column {}.{}"),
    (re.compile(r"column (\S+) does not exist"), "the column {}"),
)


def _missing_from_schema(orig: Any) -> str | None:
    """``the table <name>`` (or ``the column <table.name>``) when the database error ``orig`` says
    it does not exist, else None.

    >>> _missing_from_schema(Exception("no such table: articles"))
    'the table articles'
    >>> _missing_from_schema(Exception('relation "books" does not exist\\nLINE 1: ...'))
    'the table books'
    """
    message = str(orig)
    for pattern, what in _MISSING:
        found = pattern.search(message)
        if found:
            return what.format(*found.groups())
    return None


#: What SQLite says when its file cannot be used now; its other OperationalErrors (no such table,
#: a statement too large) are mistakes to report (500), not an outage to retry later.
_SQLITE_OUTAGES = ("locked", "busy", "unable to open", "disk i/o", "disk is full")


def _unreachable(orig: Any) -> bool:
    if "sqlite" not in type(orig).__module__:
        return True  # the driver could not reach the server, or the server's resources ran out
    message = str(orig).lower()
    return any(outage in message for outage in _SQLITE_OUTAGES)


def pool_timeout_view(exc: PoolTimeout, request: Request) -> Any:
    """Every connection of the pool stayed busy for ``jsonapi.pool_timeout_seconds``: 503."""
    log.warning("no database connection free within the pool timeout (request id %s)", getattr(request, "request_id", "-"))
    detail = "The service is busy; try again shortly."
    return error_response(request, 503, [error_object(503, "Service Unavailable", detail)], {"Retry-After": "5"})


def internal_error_view(exc: Exception, request: Request) -> Any:
    log.exception("unexpected error (request id %s)", getattr(request, "request_id", "-"), exc_info=exc)
    return _internal_error(request)


def _internal_error(request: Request) -> Any:
    detail = "An unexpected error occurred. Report its id to the operators."
    return error_response(request, 500, [error_object(500, "Internal Server Error", detail)])


def includeme(config: Configurator) -> None:
    """Register the exception views (most specific context wins)."""
    config.add_exception_view(jsonapi_error_view, context=JsonApiError)
    config.add_exception_view(not_found_view, context=HTTPNotFound)
    config.add_exception_view(forbidden_view, context=HTTPForbidden)
    config.add_exception_view(http_exception_view, context=HTTPException)
    config.add_exception_view(url_decode_error_view, context=URLDecodeError)
    config.add_exception_view(url_decode_error_view, context=UnicodeDecodeError)
    config.add_exception_view(integrity_error_view, context=IntegrityError)
    config.add_exception_view(data_error_view, context=DataError)
    config.add_exception_view(stale_data_view, context=StaleDataError)
    config.add_exception_view(database_unavailable_view, context=DBAPIError)
    config.add_exception_view(pool_timeout_view, context=PoolTimeout)
    config.add_exception_view(internal_error_view, context=Exception)
