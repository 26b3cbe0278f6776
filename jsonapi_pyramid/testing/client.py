"""A WebTest client that validates every JSON:API document it receives."""
from __future__ import annotations

import contextlib
import functools
import json
import pathlib
from typing import Any

from sqlalchemy import event

from ..negotiation import SIDEPOST_EXT, SIDEPOST_MEDIA_TYPE

__all__ = ["SCHEMA_PATH", "Client", "check_document", "schema_validator", "without_local_ids"]

MEDIA_TYPE = "application/vnd.api+json"
#: The JSON:API 1.1 schema (JSON Schema 2020-12), shipped with the package.
SCHEMA_PATH = pathlib.Path(__file__).with_name("jsonapi-1.1.schema.json")


@functools.lru_cache(maxsize=1)
def schema_validator() -> Any:
    """A ``jsonschema`` validator of JSON:API 1.1 documents (formats checked)."""
    import jsonschema

    schema = json.loads(SCHEMA_PATH.read_text())
    return jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def check_document(response: Any) -> None:
    """Assert that a response with a JSON:API body is a valid JSON:API 1.1 document (plus the
    "included needs data" rule the schema's draft-07 ``dependencies`` no longer expresses)."""
    if not response.body:
        return
    content_type = response.headers.get("Content-Type", "")
    assert content_type.startswith(MEDIA_TYPE), f"{response.request.path_qs}: Content-Type {content_type!r}"
    document = without_local_ids(json.loads(response.body))
    errors = sorted(schema_validator().iter_errors(document), key=lambda e: list(e.path))
    assert not errors, f"{response.request.path_qs}: invalid JSON:API document: " + "; ".join(
        f"{list(e.path)}: {e.message[:200]}" for e in errors[:5])
    if "included" in document:
        assert "data" in document, "a document with included must have data"
    if "errors" in document:
        assert str(response.status_int) in {e["status"] for e in document["errors"]}


_LOCAL_IDS = frozenset({"lid", "temp-id"})


def without_local_ids(document: Any) -> Any:
    """A sideposting answer (``jsonapi.ext`` names ``SIDEPOST_EXT``) without the ``lid`` members
    of its resources, which the JSON:API schema does not allow beside an ``id`` (the extension
    adds them: docs/sideposting.rst), nor the ``temp-id`` members the Graphiti adapter adds
    (``jsonapi.graphiti_sideposting``); any other document as it is."""
    if not isinstance(document, dict) or SIDEPOST_EXT not in document.get("jsonapi", {}).get("ext", ()):
        return document
    document = dict(document)
    for member in ("data", "included"):
        value = document.get(member)
        if isinstance(value, dict):
            document[member] = {name: item for name, item in value.items() if name not in _LOCAL_IDS}
        elif isinstance(value, list):
            document[member] = [{name: item for name, item in resource.items() if name not in _LOCAL_IDS} for resource in value]
    return document


class Client:
    """``get``/``post``/``patch``/``delete`` on a ``webtest.TestApp`` with the kit's headers, the
    JSON:API media type on bodies, an expected status, and every response document validated."""

    def __init__(self, app: Any, headers: Any = None) -> None:
        self.app = app
        self.headers = dict(headers or {})

    @property
    def registry(self) -> Any:
        return self.app.app.registry

    def get(self, url: Any, status: int = 200, params: Any = None) -> Any:
        return self._check(self.app.get(url, params=params, headers=self.headers, status=status))

    def post(self, url: Any, data: Any, status: Any) -> Any:
        return self._send("post", url, data, status)

    def patch(self, url: Any, data: Any, status: Any) -> Any:
        return self._send("patch", url, data, status)

    def delete(self, url: Any, data: Any = None, status: int = 204) -> Any:
        if data is None:
            return self._check(self.app.delete(url, headers=self.headers, status=status))
        return self._send("delete", url, data, status)

    def sidepost(self, method: str, url: Any, data: Any, included: list[Any], status: Any) -> Any:
        """``post`` or ``patch`` of ``data`` with new resources in ``included`` (the sideposting extension)."""
        return self._send(method, url, data, status, included)

    def _send(self, method: Any, url: Any, data: Any, status: Any, included: list[Any] | None = None) -> Any:
        headers = {**self.headers, "Content-Type": MEDIA_TYPE if included is None else SIDEPOST_MEDIA_TYPE}
        body = json.dumps({"data": data} if included is None else {"data": data, "included": included})
        response = getattr(self.app, method)(url, params=body, headers=headers, status=status)
        return self._check(response)

    @staticmethod
    def _check(response: Any) -> Any:
        check_document(response)
        return response

    @contextlib.contextmanager
    def statements(self) -> Any:
        """``with client.statements() as seen:`` the SQL statements the application ran."""
        engine = self.registry.get("db.engine")  # the engine config.include("jsonapi_pyramid.db") made
        if engine is None:
            import pytest

            pytest.skip("statements are counted on registry['db.engine'] (jsonapi_pyramid.db), which this application has not")
        seen: list[str] = []

        def record(conn: Any, cursor: Any, statement: Any, parameters: Any, context: Any, executemany: Any) -> None:
            if not statement.lstrip().upper().startswith(("SAVEPOINT", "RELEASE", "ROLLBACK", "COMMIT", "BEGIN")):
                seen.append(statement)

        event.listen(engine, "before_cursor_execute", record)
        try:
            yield seen
        finally:
            event.remove(engine, "before_cursor_execute", record)
