"""The lean ceiling: the least code that answers the benchmark's requests with the reference
service's documents, byte for byte (bench/selfcheck.py proves it per scenario).

What it leaves out, on purpose, so that a ratio against it is not flattered: no tweens (Pyramid's
exception view tween only), no security policy, no ACLs, no negotiation, no logging, no ORM, no
SQLAlchemy at request time. Pyramid's URL dispatch (three routes) calls plain functions; each
waitress thread keeps one DBAPI connection (sqlite3, or psycopg in autocommit mode) and runs SQL
strings written once per dialect at start-up (psycopg prepares them on the server after a few
executions); values go to dicts written out by hand and orjson. The same SQL statements as the
reference service per request (one for a page, one per include path, one window-function
statement for a paged include), the same visibility rule for an anonymous caller (published
articles; their comments), the same signed cursors (HMAC-SHA256 under the same secret), the same
strong ETag when a request carries ``If-None-Match`` (for the 304 scenario; 200s carry none).

Only what the scenarios need is implemented:

* ``GET /api/articles`` with ``page[size]``, ``page[number]``, ``page[after]`` (signed keyset
  cursor), the cursor profile's first page, ``include`` (``author``, ``comments``, ``tags``),
  ``page[comments][size]``, ``filter[author.name]``, ``sort=-createdAt``;
* ``GET /api/articles/{id}`` with ``include=comments.author`` (or a subset);
* ``POST /api/articles`` with a bearer token (SHA-256 of the secret looked up in ``tokens``).

``make_app(url)`` returns the WSGI app and a ``Counter`` (statements run, for bench/counting.py).

``make_app(url, core=True)`` is ``ceiling-core``, the ceiling issue 37's targets are defined
against ("a hand-written Pyramid + SQLAlchemy Core + orjson ceiling producing the same documents"):
the same views, SQL and documents, only the database layer differs. An ``Engine`` made from the
URL with SQLAlchemy's default pool and ``pool_pre_ping=True`` (as production.ini sets it, without
the service's ``jsonapi.pool_ping_after_seconds``: a ping per checkout); each request runs in
``with engine.connect() as connection:`` (the pool's checkout, SQLAlchemy's autobegun transaction:
on PostgreSQL BEGIN before the first statement and ROLLBACK when the connection goes back to the
pool; a create commits with ``connection.commit()``); statements are ``text()`` objects built once
(per IN-list length, as the DBAPI ceiling writes its strings) from the same SQL with named binds,
run by ``connection.execute(statement, params)``; rows are read as ``Row`` tuples. It returns the
engine as the statement source (bench/counting.py counts its statements and its pings).
"""
from __future__ import annotations

import base64
import contextlib
import datetime as dt
import hashlib
import hmac
import math
import threading
from urllib.parse import parse_qsl, quote, urlencode

import orjson
from pyramid.config import Configurator
from pyramid.response import Response
from sqlalchemy.engine import make_url

MEDIA = "application/vnd.api+json"
PROFILE = "http://jsonapi.org/profiles/ethanresnick/cursor-pagination/"
CURSOR_MEDIA = f'{MEDIA}; profile="{PROFILE}"'
OPTIONS = orjson.OPT_NAIVE_UTC | orjson.OPT_UTC_Z
JSONAPI = {"version": "1.1"}
#: members per parent of a to-many include without page[<path>][size]: the service's
#: jsonapi.default_include_size, whose default is its default page size (bench/apps.py: 20)
INCLUDE_SIZE = 20
JSONAPI_CURSOR = {"version": "1.1", "profile": [PROFILE]}
#: The reference service under bench/serve.py signs cursors with this secret too.
CURSOR_SECRET = "bench-cursor-secret"
CURSOR_KEY = hashlib.sha256(CURSOR_SECRET.encode()).digest()

ARTICLE = "a.id, a.title, a.body, a.status, a.user_id, a.created_at, a.updated_at"
USER = "u.id, u.name, u.active, u.created_at, u.updated_at"
COMMENT = "c.id, c.body, c.article_id, c.user_id, c.created_at"
SQL = {
    "page": f"SELECT {ARTICLE} FROM articles a WHERE a.status = 'published' ORDER BY a.id LIMIT {{p}} OFFSET {{p}}",
    "after": f"SELECT {ARTICLE} FROM articles a WHERE a.status = 'published' AND a.id > {{p}} ORDER BY a.id LIMIT {{p}}",
    "by_author": f"SELECT {ARTICLE} FROM articles a WHERE a.status = 'published' "
                 "AND a.user_id IN (SELECT u.id FROM users u WHERE u.name = {p}) "
                 "ORDER BY a.created_at DESC, a.id LIMIT {p} OFFSET {p}",
    "one": f"SELECT {ARTICLE} FROM articles a WHERE a.id = {{p}} AND a.status = 'published'",
    "users": f"SELECT {USER} FROM users u WHERE u.id IN ({{ids}})",
    "comments": f"SELECT {COMMENT} FROM comments c WHERE c.article_id IN ({{ids}}) ORDER BY c.article_id, c.id",
    "comments_paged": f"SELECT {COMMENT}, r.rank, r.total FROM (SELECT c.id AS id, "
                      "ROW_NUMBER() OVER (PARTITION BY c.article_id ORDER BY c.id) AS rank, "
                      "COUNT(*) OVER (PARTITION BY c.article_id) AS total FROM comments c "
                      "WHERE c.article_id IN ({ids})) r JOIN comments c ON c.id = r.id "
                      "WHERE r.rank = 1 OR r.rank BETWEEN {p} AND {p} ORDER BY c.article_id, c.id",
    "tags_paged": "SELECT r.article_id, g.id, g.name, r.total FROM (SELECT t.article_id AS article_id, "
                  "t.tag_id AS tag_id, ROW_NUMBER() OVER (PARTITION BY t.article_id ORDER BY t.tag_id) AS rank, "
                  "COUNT(*) OVER (PARTITION BY t.article_id) AS total FROM article_tags t "
                  "WHERE t.article_id IN ({ids})) r JOIN tags g ON g.id = r.tag_id "
                  "WHERE r.rank BETWEEN {p} AND {p} ORDER BY r.article_id, g.id",
    "token": "SELECT k.user_id FROM tokens k JOIN users u ON u.id = k.user_id "
             "WHERE k.secret_hash = {p} AND k.expires_at > {p} AND u.active",
    "insert": "INSERT INTO articles (title, body, status, user_id, created_at, updated_at) "
              f"VALUES ({{p}}, {{p}}, {{p}}, {{p}}, {{p}}, {{p}}) RETURNING {ARTICLE.replace('a.', '')}",
}


class Counter:
    """Statements run (read by bench/counting.py while requests come one at a time)."""

    statements = 0


class Database:
    """One DBAPI connection per waitress thread; the SQL above in the driver's parameter style.
    With ``core``: SQLAlchemy Core on an ``Engine`` instead (the module's text)."""

    def __init__(self, url: str, counter: Counter, core: bool = False):
        parsed = make_url(url)
        self.sqlite = parsed.get_backend_name() == "sqlite"
        self.core = core
        self.placeholder = "?" if self.sqlite else "%s"
        if core:
            self.engine = core_engine(url, self.sqlite)
        elif self.sqlite:
            self.path = parsed.database
        else:
            self.conninfo = parsed.set(drivername="postgresql").render_as_string(hide_password=False)
        self.sql = {name: self.statement(text) for name, text in SQL.items() if "{ids}" not in text}
        self.local = threading.local()
        self.counter = counter
        self.in_lists: dict = {}
        self.opened: list = []

    def statement(self, sql: str):
        """``sql``'s ``{p}`` in the driver's parameter style, or (Core) a ``text()`` with named binds
        ``:b0``, ``:b1``, ... in the order of the positional parameters."""
        if not self.core:
            return sql.replace("{p}", self.placeholder)
        from sqlalchemy import text

        parts = sql.split("{p}")
        return text("".join(part + (f":b{index}" if index < len(parts) - 1 else "") for index, part in enumerate(parts)))

    def connection(self):
        if self.core:  # the request's (``connected``)
            return self.local.conn
        conn = getattr(self.local, "conn", None)
        if conn is None:
            if self.sqlite:
                import sqlite3

                conn = sqlite3.connect(self.path, check_same_thread=False)
                conn.execute("PRAGMA foreign_keys=ON")
            else:
                import psycopg

                conn = psycopg.connect(self.conninfo, autocommit=True)
            self.local.conn = conn
            self.opened.append(conn)
        return conn

    @contextlib.contextmanager
    def connected(self):
        """Core: one pool checkout for the request (``with engine.connect() as connection``)."""
        with self.engine.connect() as connection:
            self.local.conn = connection
            try:
                yield connection
            finally:
                self.local.conn = None

    def commit(self) -> None:
        """A create's commit: psycopg's connection is in autocommit; sqlite3's and Core's are not."""
        if self.core or self.sqlite:
            self.connection().commit()

    def close(self) -> None:
        """Closes every thread's connection (the app is not used afterwards)."""
        for conn in self.opened:
            conn.close()
        self.opened.clear()
        if self.core:
            self.engine.dispose()

    def rows(self, name: str, params=(), ids=None) -> list:
        sql = self.sql.get(name)
        if ids is not None:
            key = (name, len(ids))
            sql = self.in_lists.get(key)
            if sql is None:  # an IN list of this length: written once
                sql = self.in_lists[key] = self.statement(SQL[name].replace("{ids}", ", ".join(["{p}"] * len(ids))))
            params = (*ids, *params)
        self.counter.statements += 1
        if self.core:
            return self.local.conn.execute(sql, {f"b{index}": value for index, value in enumerate(params)}).all()
        cursor = self.connection().execute(sql, params)
        return cursor.fetchall()

    def time(self, value):
        """SQLite keeps datetimes as text; PostgreSQL gives datetime objects."""
        return dt.datetime.fromisoformat(value) if value.__class__ is str else value


def core_engine(url: str, sqlite: bool):
    """The Core ceiling's engine: SQLAlchemy's default pool, ``pool_pre_ping`` as production.ini."""
    from sqlalchemy import create_engine, event

    engine = create_engine(url, pool_pre_ping=True)
    if sqlite:  # as the DBAPI ceiling's connections (and the service's)
        event.listen(engine, "connect", lambda dbapi_connection, _record: dbapi_connection.execute("PRAGMA foreign_keys=ON"))
    return engine


# -- documents ------------------------------------------------------------------------------------

def rels(url, names, linkage=None):
    out = {}
    for name in names:
        member = {"links": {"self": f"{url}/relationships/{name}", "related": f"{url}/{name}"}}
        if linkage is not None and name in linkage:
            extra = linkage[name]
            if extra.__class__ is tuple:  # a paged to-many: (links, count, data)
                member["links"].update(extra[0])
                member["meta"] = {"count": extra[1]}
                extra = extra[2]
            member["data"] = extra
        out[name] = member
    return out


def article(db, base, row, linkage=None, cursor=None):
    url = f"{base}articles/{row[0]}"
    resource = {
        "type": "articles", "id": str(row[0]),
        "attributes": {"title": row[1], "body": row[2], "status": row[3],
                       "createdAt": db.time(row[5]), "updatedAt": db.time(row[6])},
        "relationships": rels(url, ("author", "comments", "tags"), linkage),
        "links": {"self": url},
    }
    if cursor is not None:
        resource["meta"] = {"page": {"cursor": cursor}}
    return resource


def user(db, base, row):
    url = f"{base}users/{row[0]}"
    return {
        "type": "users", "id": str(row[0]),
        "attributes": {"name": row[1], "active": bool(row[2]), "createdAt": db.time(row[3]), "updatedAt": db.time(row[4])},
        "relationships": rels(url, ("roles", "articles", "profile")),
        "links": {"self": url},
    }


def comment(db, base, row, linkage=None):
    url = f"{base}comments/{row[0]}"
    return {
        "type": "comments", "id": str(row[0]),
        "attributes": {"body": row[1], "createdAt": db.time(row[4])},
        "relationships": rels(url, ("article", "author"), linkage),
        "links": {"self": url},
    }


def users_in_order(db, base, ids):
    """Included users in the order of first appearance (the reference service's order)."""
    ordered = list(dict.fromkeys(ids))
    if not ordered:
        return []
    by_id = {row[0]: row for row in db.rows("users", ids=ordered)}
    return [user(db, base, by_id[i]) for i in ordered if i in by_id]


def paged_links(related, number, size, count):
    last = max(1, math.ceil(count / size))

    def link(n):
        return f"{related}?page[number]={n}&page[size]={size}"

    return {"first": link(1), "prev": link(number - 1) if number > 1 else None,
            "next": link(number + 1) if number < last else None, "last": link(last)}


def includes(db, base, rows, include, comments_size=None):
    """Linkage per article id and the included resources: one statement per include path. A
    to-many include is always paged: ``page[comments][size]``, else the service's default
    include size (``jsonapi.default_include_size``: its default page size)."""
    comments_size = comments_size or INCLUDE_SIZE
    ids = sorted(row[0] for row in rows)
    linkage = {row[0]: {} for row in rows}
    included = []
    if "author" in include:
        for row in rows:
            linkage[row[0]]["author"] = {"type": "users", "id": str(row[4])}
        by_article = {row[0]: row[4] for row in rows}
        included += users_in_order(db, base, [by_article[i] for i in ids])
    if "comments" in include or "comments.author" in include:
        with_author = "comments.author" in include
        members = {i: [] for i in ids}
        found, counts = [], {}
        for row in (db.rows("comments_paged", (1, comments_size), ids=ids) if ids else ()):
            counts[row[2]] = row[6]
            found.append(row)
        for c in found:
            members[c[2]].append({"type": "comments", "id": str(c[0])})
            cl = {"author": None if c[3] is None else {"type": "users", "id": str(c[3])}} if with_author else None
            included.append(comment(db, base, c, cl))
        for i in ids:
            linkage[i]["comments"] = (paged_links(f"{base}articles/{i}/comments", 1, comments_size, counts.get(i, 0)),
                                      counts.get(i, 0), members[i])
        if with_author:
            included += users_in_order(db, base, [c[3] for c in sorted(found) if c[3] is not None])
    if "tags" in include:
        members, counts = {i: [] for i in ids}, {}
        seen = {}
        for article_id, tag_id, name, total in (db.rows("tags_paged", (1, INCLUDE_SIZE), ids=ids) if ids else ()):
            members[article_id].append({"type": "tags", "id": str(tag_id)})
            counts[article_id] = total
            if tag_id not in seen:
                url = f"{base}tags/{tag_id}"
                seen[tag_id] = {"type": "tags", "id": str(tag_id), "attributes": {"name": name},
                                "relationships": rels(url, ("articles",)), "links": {"self": url}}
        for i in ids:
            linkage[i]["tags"] = (paged_links(f"{base}articles/{i}/tags", 1, INCLUDE_SIZE, counts.get(i, 0)),
                                  counts.get(i, 0), members[i])
        included += seen.values()
    return linkage, included


# -- answers --------------------------------------------------------------------------------------

def respond(request, document, status=200, content_type=MEDIA):
    body = orjson.dumps(document, option=OPTIONS)
    match = request.environ.get("HTTP_IF_NONE_MATCH")
    if match is not None and status == 200:  # the 304 scenario: the same strong tag as the service's
        etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
        if etag in match:
            return Response(status=304, headers={"ETag": etag})
    response = Response(body=body, status=status, charset=None)
    response.content_type = content_type
    return response


def error(request, status, detail, parameter=None):
    err = {"status": str(status), "title": {400: "Bad Request", 401: "Unauthorized", 404: "Not Found",
                                            415: "Unsupported Media Type", 422: "Unprocessable Entity"}[status],
           "detail": detail}
    if parameter:
        err["source"] = {"parameter": parameter}
    return respond(request, {"jsonapi": JSONAPI, "errors": [err]}, status)


def base_url(environ):
    host = environ.get("HTTP_HOST") or f"{environ['SERVER_NAME']}:{environ['SERVER_PORT']}"
    scheme = environ["wsgi.url_scheme"]
    if (scheme, host[-3:]) == ("http", ":80"):
        host = host[:-3]
    return f"{scheme}://{host}{environ.get('SCRIPT_NAME', '')}"


def sign_payload(scope, payload):
    mac = hmac.new(CURSOR_KEY, scope + b"\x00" + payload.encode(), hashlib.sha256).digest()[:16]
    return base64.urlsafe_b64encode(mac).rstrip(b"=").decode()


def sign(scope, values):
    payload = base64.urlsafe_b64encode(orjson.dumps({"k": values})).rstrip(b"=").decode()
    return payload + "." + sign_payload(scope, payload)


def unsign(scope, raw):
    payload, _, signature = raw.partition(".")
    if not hmac.compare_digest(signature, sign_payload(scope, payload)):
        raise ValueError(raw)
    return orjson.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["k"]


def list_articles(request):
    db, environ = request.registry["db"], request.environ
    root = base_url(environ)
    base = root + "/api/"
    query = environ.get("QUERY_STRING", "")
    params = parse_qsl(query, keep_blank_values=True)
    get = dict(params)
    try:
        size = int(get.get("page[size]", "20"))
        number = int(get.get("page[number]", "1"))
        include = set(get["include"].split(",")) if "include" in get else None
        comments_size = int(get["page[comments][size]"]) if "page[comments][size]" in get else None
    except ValueError:
        return error(request, 400, "bad query parameter")
    if include is not None and not include <= {"author", "comments", "tags"}:
        return error(request, 400, "bad include", "include")
    after = get.get("page[after]")
    cursor = after is not None or PROFILE in environ.get("HTTP_ACCEPT", "")
    name, sort = get.get("filter[author.name]"), get.get("sort")
    path = environ["PATH_INFO"]
    if cursor:
        if name is not None or sort is not None:
            return error(request, 400, "not in the ceiling", "sort")
        scope = f"{path}\n".encode()
        try:
            start = unsign(scope, after)[0] if after is not None else 0
        except (ValueError, KeyError, IndexError):
            return error(request, 400, "bad cursor", "page[after]")
        rows = db.rows("after", (start, size + 1))
    elif name is not None:
        if sort != "-createdAt":
            return error(request, 400, "not in the ceiling", "sort")
        rows = db.rows("by_author", (name, size + 1, (number - 1) * size))
    elif sort is None:
        rows = db.rows("page", (size + 1, (number - 1) * size))
    else:
        return error(request, 400, "not in the ceiling", "sort")
    more = len(rows) > size
    rows = rows[:size]
    if include:
        linkage, included = includes(db, base, rows, include, comments_size)
    else:
        linkage, included = {}, []
    url = root + path
    links = {"self": url + "?" + query if query else url}
    if cursor:
        cursors = [sign(scope, [row[0]]) for row in rows]
        data = [article(db, base, row, linkage.get(row[0]), c) for row, c in zip(rows, cursors)]
        kept = [(k, v) for k, v in params if k not in ("page[number]", "page[after]", "page[before]")]

        def clink(extra):
            return url + "?" + urlencode(kept + extra, quote_via=quote, safe="[],.-")

        links["first"] = clink([])
        links["prev"] = clink([("page[before]", cursors[0])]) if after is not None and rows else None
        links["next"] = clink([("page[after]", cursors[-1])]) if more else None
        content_type, jsonapi = CURSOR_MEDIA, JSONAPI_CURSOR
    else:
        data = [article(db, base, row, linkage.get(row[0])) for row in rows]
        kept = [(k, v) for k, v in params if k != "page[number]"]

        def link(n):
            return url + "?" + urlencode(kept + [("page[number]", str(n))], quote_via=quote, safe="[],.-")

        links["first"] = link(1)
        links["prev"] = link(number - 1) if number > 1 else None
        links["next"] = link(number + 1) if more else None
        content_type, jsonapi = MEDIA, JSONAPI
    document = {"jsonapi": jsonapi, "data": data}
    if include is not None:
        document["included"] = included
    document["links"] = links
    return respond(request, document, content_type=content_type)


def show_article(request):
    db, environ = request.registry["db"], request.environ
    root = base_url(environ)
    base = root + "/api/"
    raw = request.matchdict["id"]
    if not raw.isdigit() or raw != str(int(raw)):
        return error(request, 404, "No resource at this URL.")
    query = environ.get("QUERY_STRING", "")
    get = dict(parse_qsl(query, keep_blank_values=True))
    include = set(get["include"].split(",")) if "include" in get else None
    if include is not None and not include <= {"comments", "comments.author", "author", "tags"}:
        return error(request, 400, "bad include", "include")
    rows = db.rows("one", (int(raw),))
    if not rows:
        return error(request, 404, "No resource at this URL.")
    row = rows[0]
    if include:
        linkage, included = includes(db, base, [row], include)
        data = article(db, base, row, linkage[row[0]])
    else:
        data, included = article(db, base, row), []
    document = {"jsonapi": JSONAPI, "data": data}
    if include is not None:
        document["included"] = included
    url = root + environ["PATH_INFO"]
    document["links"] = {"self": url + "?" + query if query else url}
    return respond(request, document)


def create_article(request):
    db, environ = request.registry["db"], request.environ
    base = base_url(environ) + "/api/"
    if environ.get("CONTENT_TYPE") != MEDIA:
        return error(request, 415, "use application/vnd.api+json")
    auth = environ.get("HTTP_AUTHORIZATION", "")
    if not auth.startswith("Bearer "):
        return error(request, 401, "a bearer token is needed")
    try:
        data = orjson.loads(request.body)["data"]
        attributes = data.get("attributes", {})
        title = attributes["title"]
    except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError):
        return error(request, 400, "malformed document")
    status = attributes.get("status", "draft")
    if data.get("type") != "articles" or not isinstance(title, str) or not 0 < len(title) <= 255 \
            or status not in ("draft", "published"):
        return error(request, 422, "invalid article")
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    stamp = now.isoformat(" ") if db.sqlite else now
    owner = db.rows("token", (hashlib.sha256(auth[7:].encode()).hexdigest(), stamp))
    if not owner:
        return error(request, 401, "bad token")
    row = db.rows("insert", (title, attributes.get("body"), status, owner[0][0], stamp, stamp))[0]
    db.commit()
    resource = article(db, base, row)
    response = respond(request, {"jsonapi": JSONAPI, "data": resource, "links": {"self": resource["links"]["self"]}}, 201)
    response.headers["Location"] = resource["links"]["self"]
    return response


def in_connection(view):
    """``view`` inside one Core connection (``Database.connected``): the Core ceiling's views."""
    def run(request):
        with request.registry["db"].connected():
            return view(request)

    return run


def make_app(url: str, core: bool = False):
    """The WSGI app and what bench/counting.py counts its statements on: the ``Counter``, or with
    ``core`` the engine (statements and pool pings)."""
    counter = Counter()
    db = Database(url, counter, core)
    wrap = in_connection if core else (lambda view: view)
    with Configurator() as config:
        config.registry["db"] = db
        config.add_route("articles", "/api/articles")
        config.add_route("article", "/api/articles/{id}")
        config.add_view(wrap(list_articles), route_name="articles", request_method="GET")
        config.add_view(wrap(create_article), route_name="articles", request_method="POST")
        config.add_view(wrap(show_article), route_name="article", request_method="GET")
    return config.make_wsgi_app(), db.engine if core else counter
