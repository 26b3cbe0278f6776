"""The benchmark's scenarios: what each application is asked, over HTTP (bench/run.py) or in-process
(bench/calls.py, bench/selfcheck.py) alike, through a ``Client``.

Applications: ``ours`` (the reference service; ``ours-noetag`` the same without ETags), ``ceiling``
(bench/ceiling.py; ``ceiling-core`` the same on SQLAlchemy Core, asked what ``ceiling`` is asked),
``floor`` (bench/floor.py: a constant body of the size of ours' answer),
``peer`` (pyramid-jsonapi, optional), ``drf`` (Django REST framework JSON:API, optional: the same
query strings as ours where it understands them), ``before`` (ours from an older tree).
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request

MEDIA = "application/vnd.api+json"
TOKEN_SECRET = "bench-secret-token-for-the-ceiling"
#: The first page of a cursor walk asks for the cursor pagination profile (jsonapi_pyramid/pagination.py).
CURSOR_ACCEPT = f'{MEDIA}; profile="http://jsonapi.org/profiles/ethanresnick/cursor-pagination/"'

SCENARIOS = {
    "S1": "GET /api/articles?page[size]=50",
    "S1r": "S1 again with If-None-Match: the ETag of S1's answer (a 304 revalidation; compare with S1's 200)",
    "S2": "GET /api/articles?page[size]=50&include=author,comments,tags",
    "S2m": "GET /api/articles?page[size]=100&include=author,comments,tags (memory target)",
    "S3": "GET /api/articles/<id>?include=comments.author",
    "S4": "GET /api/articles?filter[author.name]=<name>&sort=-createdAt&page[size]=20",
    "S5": "POST /api/articles, authenticated (bearer token)",
    "S6n": "GET /api/articles?page[number]=200&page[size]=20",
    "S6c": "GET /api/articles?page[after]=<cursor of page 199>&page[size]=20",
    "S7u": "GET /api/articles?page[size]=50&include=comments (every comment of each article)",
    "S7p": "GET /api/articles?page[size]=50&include=comments&page[comments][size]=3 (paged, counted include)",
}
#: The scenarios whose ETag cost is measured (``ours-noetag``).
ETAG_SCENARIOS = ("S1", "S2", "S3", "S4")
#: The scenarios whose metrics' and traces' cost is measured (``ours-nometrics``, ``ours-traced``).
METRICS_SCENARIOS = ("S1", "S5")
#: Apps that serve the same requests as ``ours``.
OURS_LIKE = ("ours", "ours-noetag", "ours-nometrics", "ours-traced", "before")


class Request:
    def __init__(self, path: str, method: str = "GET", body: bytes | None = None, headers: dict | None = None,
                 expect: int = 200, note: str = ""):
        self.path, self.method, self.body, self.headers, self.expect, self.note = (
            path, method, body, headers or {}, expect, note)


class Unavailable(Exception):
    """A scenario the application cannot answer (the reason is reported)."""


class Client:
    """``request(method, path, body, headers) -> (status, headers dict, body bytes)``; ``base`` is
    the URL prefix the application writes into its links."""

    base = "http://localhost"

    def request(self, method: str, path: str, body: bytes | None = None, headers: dict | None = None):
        raise NotImplementedError


class HttpClient(Client):
    def __init__(self, base: str):
        self.base = base

    def request(self, method, path, body=None, headers=None):
        if path.startswith("http"):
            path = path[len(self.base):]
        request = urllib.request.Request(self.base + path, data=body, method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                return response.status, dict(response.headers), response.read()
        except urllib.error.HTTPError as error:
            return error.code, dict(error.headers), error.read()


class WsgiClient(Client):
    """Calls a WSGI application in this process (webob builds the environ)."""

    def __init__(self, app):
        self.app = app

    def request(self, method, path, body=None, headers=None):
        from webob import Request as WebobRequest

        if path.startswith("http"):
            path = path[len(self.base):]
        request = WebobRequest.blank(path, method=method, headers=headers or {}, body=body)
        response = request.get_response(self.app)
        return response.status_int, dict(response.headers), response.body


def q(**params) -> str:
    return urllib.parse.urlencode(params, quote_via=urllib.parse.quote, safe="[],.:-")


def peer_query(**params) -> str:
    # The reference service hides drafts from anonymous callers: the peer gets the same rows by filter.
    return q(**{"filter[status:eq]": "published", **params})


def etag_of(body: bytes) -> str:
    """The service's strong tag (jsonapi_pyramid.conditional.etag_of)."""
    return '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


def build(app: str, scenario: str, client: Client, facts: dict, context: dict) -> Request:
    """The request ``app`` gets for ``scenario`` (``context`` collects walk timings)."""
    kind = "ours" if app in OURS_LIKE else "ceiling" if app == "ceiling-core" else app
    if scenario in ("S1", "S2", "S2m"):
        size = "100" if scenario == "S2m" else "50"
        extra = {} if scenario == "S1" else {"include": "author,comments,tags"}
        if kind == "peer":
            return Request("/api/articles?" + peer_query(**{"page[limit]": size}, **extra))
        return Request("/api/articles?" + q(**{"page[size]": size}, **extra))
    if scenario == "S1r":
        if kind == "peer":
            raise Unavailable("pyramid-jsonapi sends no ETag")
        if kind == "drf":
            raise Unavailable("Django REST framework JSON:API sends no ETag (Django's ConditionalGetMiddleware "
                              "is not part of its set-up)")
        path = "/api/articles?" + q(**{"page[size]": "50"})
        status, headers, body = client.request("GET", path, headers={"Accept": MEDIA})
        if status != 200:
            raise Unavailable(f"S1 answered {status}")
        etag = headers.get("ETag") or headers.get("Etag")
        if etag is None:
            if kind == "ceiling":
                etag = etag_of(body)  # the ceiling tags only when asked (If-None-Match)
            else:
                raise Unavailable("no ETag on S1's answer (ETags off)")
        return Request(path, headers={"If-None-Match": etag}, expect=304)
    if scenario == "S3":
        note = "the article is published; the peer applies no visibility rule" if kind == "peer" else ""
        return Request(f"/api/articles/{facts['article']}?" + q(include="comments.author"), note=note)
    if scenario == "S4":
        if kind == "peer":
            return Request("/api/articles?" + peer_query(**{"filter[author.name:eq]": facts["author"],
                                                            "sort": "-created_at", "page[limit]": "20"}))
        return Request("/api/articles?" + q(**{"filter[author.name]": facts["author"], "sort": "-createdAt",
                                               "page[size]": "20"}))
    if scenario == "S5":
        return post_request(kind, client, facts)
    if scenario == "S6n":
        if kind == "peer":
            return Request("/api/articles?" + peer_query(**{"page[offset]": "3980", "page[limit]": "20"}))
        return Request("/api/articles?" + q(**{"page[number]": "200", "page[size]": "20"}))
    if scenario == "S6c":
        if kind == "peer":
            raise Unavailable("pyramid-jsonapi has no cursor pagination")
        if kind == "drf":
            raise Unavailable("Django REST framework JSON:API has no cursor pagination profile")
        return cursor_request(client, context)
    if scenario in ("S7u", "S7p"):
        if kind == "peer":
            raise Unavailable("pyramid-jsonapi has no paged includes")
        if kind == "drf" and scenario == "S7p":
            raise Unavailable("Django REST framework JSON:API has no paged includes")
        paged = {"page[comments][size]": "3"} if scenario == "S7p" else {}
        return Request("/api/articles?" + q(**{"page[size]": "50", "include": "comments"}, **paged))
    raise AssertionError(scenario)


def post_request(kind: str, client: Client, facts: dict) -> Request:
    body = {"data": {"type": "articles", "attributes": {"title": "A benchmark article", "body": "Written by wrk.",
                                                        "status": "published"}}}
    headers = {"Content-Type": MEDIA, "Accept": MEDIA}
    if kind == "peer":
        # No authentication layer is configured for the peer; it needs the author as a relationship.
        body["data"]["relationships"] = {"author": {"data": {"type": "users", "id": str(facts["user_id"])}}}
        return Request("/api/articles", "POST", json.dumps(body).encode(), headers, 201,
                       note="unauthenticated (no auth configured for the peer)")
    if kind in ("ceiling", "drf"):  # no token endpoint: bench/run.py stores this token's hash
        secret = TOKEN_SECRET
    else:
        status, _headers, raw = client.request("POST", "/api/tokens", json.dumps(
            {"data": {"type": "tokens", "attributes": {"email": facts["email"], "password": "scale-password"}}}).encode(),
            {"Content-Type": MEDIA, "Accept": MEDIA})
        if status != 201:
            raise Unavailable(f"POST /api/tokens answered {status}")
        secret = json.loads(raw)["data"]["attributes"]["token"]
    headers["Authorization"] = f"Bearer {secret}"
    return Request("/api/articles", "POST", json.dumps(body).encode(), headers, 201)


def cursor_request(client: Client, context: dict) -> Request:
    """Walk ``links.next`` from page 1 to page 200 (timed), then benchmark the request of page 200."""
    first = "/api/articles?" + q(**{"page[size]": "20"})
    status, _headers, raw = client.request("GET", first, headers={"Accept": CURSOR_ACCEPT})
    next_url = json.loads(raw).get("links", {}).get("next") if status == 200 else None
    if not next_url or "after" not in urllib.parse.unquote(next_url):
        raise Unavailable(f"no page[after] in links.next of the first page asked for with the cursor profile "
                          f"(status {status})")
    started = time.monotonic()
    url = first
    for _ in range(199):
        status, _headers, raw = client.request("GET", url, headers={"Accept": CURSOR_ACCEPT})
        if status != 200:
            raise Unavailable(f"cursor walk failed with {status}")
        url = json.loads(raw)["links"]["next"]
        if not url:
            raise Unavailable("cursor walk ended before page 200")
    context["walk_s"] = time.monotonic() - started
    parsed = urllib.parse.urlsplit(url)
    return Request(parsed.path + "?" + parsed.query)


def floor_request(request: Request, status: int, size: int) -> Request:
    """The floor's request standing for ``request`` answered with ``status`` and ``size`` bytes."""
    return Request(f"/__floor__/{status}/{size}", request.method, request.body, request.headers, status)


# -- comparing documents --------------------------------------------------------------------------

#: Members that differ between two creates by nature: the new id and the clock.
_CREATED = re.compile(rb'("id":"|/articles/)\d+|"(createdAt|updatedAt)":"[^"]*"')


def normalise(scenario: str, body: bytes, base: str) -> bytes:
    """``body`` with the application's own URL prefix replaced (the apps listen on different ports)
    and, for a create (S5), the new id and its timestamps blanked."""
    body = body.replace(base.encode(), b"BASE")
    if scenario == "S5":
        body = _CREATED.sub(lambda m: m.group(0)[: m.group(0).index(b":") + 1] + b"X" if m.group(2)
                            else m.group(1) + b"N", body)
    return body


def first_difference(a: bytes, b: bytes) -> str:
    """Where two bodies part, with some context, for a report."""
    index = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return (f"sizes {len(a)} / {len(b)}; first difference at byte {index}: "
            f"ours ...{a[max(0, index - 80):index + 80]!r}... ceiling ...{b[max(0, index - 80):index + 80]!r}...")


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
