"""The ceiling: plain Pyramid views over SQLAlchemy Core, serialised with orjson.

This is what a careful person would write by hand for exactly the benchmark's requests, with no
framework layer: the same documents as the reference service (attributes, relationship links,
linkage on include paths, ``included``, page links), the same visibility rule (anonymous callers
see published articles and their comments only), one statement for the page plus one batched
``IN`` statement per include path. Only what the scenarios need is implemented:

* ``GET /api/articles`` with ``page[size]``, ``page[number]``, ``page[after]`` (keyset on id),
  ``include`` (``author``, ``comments``, ``tags``), ``filter[author.name]``, ``sort=-createdAt``;
* ``GET /api/articles/{id}`` with ``include=comments.author`` (or ``comments``);
* ``POST /api/articles`` with a bearer token (sha256 of the secret looked up in ``tokens``).

The tables come from the reference service's metadata (schema only; no ORM is used).
"""
from __future__ import annotations

import datetime as dt
import hashlib
from urllib.parse import quote, urlencode

import orjson
from pyramid.config import Configurator
from pyramid.response import Response
from sqlalchemy import create_engine, event, insert, select

from jsonapi_blog.models import Base

MEDIA = "application/vnd.api+json"
OPTIONS = orjson.OPT_NAIVE_UTC | orjson.OPT_UTC_Z
JSONAPI = {"version": "1.1"}

T = Base.metadata.tables
ARTICLES, USERS, COMMENTS, TAGS, ARTICLE_TAGS, TOKENS = (
    T["articles"], T["users"], T["comments"], T["tags"], T["article_tags"], T["tokens"])
A = ARTICLES.c
ARTICLE_COLUMNS = (A.id, A.title, A.body, A.status, A.user_id, A.created_at, A.updated_at)
USER_COLUMNS = (USERS.c.id, USERS.c.name, USERS.c.active, USERS.c.created_at, USERS.c.updated_at)
COMMENT_COLUMNS = (COMMENTS.c.id, COMMENTS.c.body, COMMENTS.c.article_id, COMMENTS.c.user_id, COMMENTS.c.created_at)


def respond(document, status=200, headers=None):
    response = Response(body=orjson.dumps(document, option=OPTIONS), status=status, content_type=MEDIA, charset=None)
    if headers:
        response.headers.update(headers)
    return response


def error(status, title, detail, parameter=None):
    err = {"status": str(status), "title": title, "detail": detail}
    if parameter:
        err["source"] = {"parameter": parameter}
    return respond({"jsonapi": JSONAPI, "errors": [err]}, status)


def rels(url, names, linkage=None):
    out = {}
    for name in names:
        member = {"links": {"self": f"{url}/relationships/{name}", "related": f"{url}/{name}"}}
        if linkage is not None and name in linkage:
            member["data"] = linkage[name]
        out[name] = member
    return out


def article(base, row, linkage=None):
    url = f"{base}articles/{row[0]}"
    return {
        "type": "articles", "id": str(row[0]),
        "attributes": {"title": row[1], "body": row[2], "status": row[3], "createdAt": row[5], "updatedAt": row[6]},
        "relationships": rels(url, ("author", "comments", "tags"), linkage),
        "links": {"self": url},
    }


def user(base, row):
    url = f"{base}users/{row[0]}"
    return {
        "type": "users", "id": str(row[0]),
        "attributes": {"name": row[1], "active": row[2], "createdAt": row[3], "updatedAt": row[4]},
        "relationships": rels(url, ("roles", "articles", "profile")),
        "links": {"self": url},
    }


def comment(base, row, linkage=None):
    url = f"{base}comments/{row[0]}"
    return {
        "type": "comments", "id": str(row[0]),
        "attributes": {"body": row[1], "createdAt": row[4]},
        "relationships": rels(url, ("article", "author"), linkage),
        "links": {"self": url},
    }


def tag(base, row):
    url = f"{base}tags/{row[0]}"
    return {"type": "tags", "id": str(row[0]), "attributes": {"name": row[1]},
            "relationships": rels(url, ("articles",)), "links": {"self": url}}


def load_users(conn, ids):
    if not ids:
        return []
    return conn.execute(select(*USER_COLUMNS).where(USERS.c.id.in_(ids)).order_by(USERS.c.id)).all()


def includes_for_articles(conn, base, rows, include):
    """Linkage per article id and the included resources, one IN statement per include path."""
    ids = [row[0] for row in rows]
    linkage = {row[0]: {} for row in rows}
    included = []
    if "author" in include:
        for row in rows:
            linkage[row[0]]["author"] = {"type": "users", "id": str(row[4])}
        included.extend(user(base, u) for u in load_users(conn, list({row[4] for row in rows})))
    if "comments" in include or "comments.author" in include:
        for row in rows:
            linkage[row[0]]["comments"] = []
        comments = conn.execute(
            select(*COMMENT_COLUMNS).where(COMMENTS.c.article_id.in_(ids)).order_by(COMMENTS.c.article_id, COMMENTS.c.id)
        ).all() if ids else []
        with_author = "comments.author" in include
        for c in comments:
            linkage[c[2]]["comments"].append({"type": "comments", "id": str(c[0])})
            cl = None
            if with_author:
                cl = {"author": None if c[3] is None else {"type": "users", "id": str(c[3])}}
            included.append(comment(base, c, cl))
        if with_author:
            included.extend(user(base, u) for u in load_users(conn, list({c[3] for c in comments if c[3] is not None})))
    if "tags" in include:
        for row in rows:
            linkage[row[0]]["tags"] = []
        seen = {}
        if ids:
            pairs = conn.execute(
                select(ARTICLE_TAGS.c.article_id, TAGS.c.id, TAGS.c.name)
                .join(TAGS, TAGS.c.id == ARTICLE_TAGS.c.tag_id)
                .where(ARTICLE_TAGS.c.article_id.in_(ids))
                .order_by(ARTICLE_TAGS.c.article_id, TAGS.c.id)
            ).all()
            for article_id, tag_id, name in pairs:
                linkage[article_id]["tags"].append({"type": "tags", "id": str(tag_id)})
                if tag_id not in seen:
                    seen[tag_id] = tag(base, (tag_id, name))
        included.extend(seen.values())
    return linkage, included


def parse_include(request, allowed):
    raw = request.GET.get("include")
    if raw is None:
        return None
    paths = raw.split(",")
    for path in paths:
        if path not in allowed:
            raise ValueError(path)
    return set(paths)


def list_articles(request):
    engine = request.registry["engine"]
    base = request.application_url + "/api/"
    get = request.GET
    try:
        size = int(get.get("page[size]", "20"))
        number = int(get.get("page[number]", "1"))
        include = parse_include(request, {"author", "comments", "tags"})
    except ValueError:
        return error(400, "Bad Request", "bad query parameter")
    if not 1 <= size <= 100 or number < 1:
        return error(400, "Bad Request", "bad page parameter", "page[size]")
    after = get.get("page[after]")
    if after is None and "cursor-pagination" in request.headers.get("Accept", ""):
        after = "0"  # the first page of a keyset walk
    statement = select(*ARTICLE_COLUMNS).where(A.status == "published")
    name = get.get("filter[author.name]")
    if name is not None:
        # An uncorrelated IN runs the users lookup once (SQLite answers it twice as fast as a
        # JOIN or a correlated EXISTS here); the reference service writes the same SQL.
        statement = statement.where(A.user_id.in_(select(USERS.c.id).where(USERS.c.name == name)))
    sort = get.get("sort")
    if sort == "-createdAt":
        statement = statement.order_by(A.created_at.desc(), A.id)
    elif sort is None:
        statement = statement.order_by(A.id)
    else:
        return error(400, "Bad Request", "unsupported sort", "sort")
    if after is not None:
        if sort is not None or not after.isdigit():
            return error(400, "Bad Request", "bad cursor", "page[after]")
        statement = statement.where(A.id > int(after)).limit(size + 1)
    else:
        statement = statement.offset((number - 1) * size).limit(size + 1)
    with engine.connect() as conn:
        rows = conn.execute(statement).all()
        has_next = len(rows) > size
        rows = rows[:size]
        if include:
            linkage, included = includes_for_articles(conn, base, rows, include)
            data = [article(base, row, linkage[row[0]]) for row in rows]
        else:
            data = [article(base, row) for row in rows]
    path = request.path_url
    if after is not None:
        kept = [(k, v) for k, v in get.items() if k not in ("page[after]", "page[number]")]
        links = {"self": request.url,
                 "next": path + "?" + urlencode(kept + [("page[after]", str(rows[-1][0]))], quote_via=quote, safe="[],.-")
                 if has_next else None}
    else:
        kept = [(k, v) for k, v in get.items() if k != "page[number]"]

        def link(n):
            return path + "?" + urlencode(kept + [("page[number]", str(n))], quote_via=quote, safe="[],.-")

        links = {"self": request.url, "first": link(1), "prev": link(number - 1) if number > 1 else None,
                 "next": link(number + 1) if has_next else None}
    document = {"jsonapi": JSONAPI, "data": data}
    if include is not None:
        document["included"] = included if include else []
    document["links"] = links
    return respond(document)


def show_article(request):
    engine = request.registry["engine"]
    base = request.application_url + "/api/"
    raw = request.matchdict["id"]
    if not raw.isdigit():
        return error(404, "Not Found", "no such article")
    try:
        include = parse_include(request, {"comments", "comments.author", "author", "tags"})
    except ValueError:
        return error(400, "Bad Request", "bad include", "include")
    with engine.connect() as conn:
        row = conn.execute(select(*ARTICLE_COLUMNS).where(A.id == int(raw), A.status == "published")).first()
        if row is None:
            return error(404, "Not Found", "no such article")
        if include:
            linkage, included = includes_for_articles(conn, base, [row], include)
            data = article(base, row, linkage[row[0]])
        else:
            data, included = article(base, row), []
    document = {"jsonapi": JSONAPI, "data": data}
    if include is not None:
        document["included"] = included
    document["links"] = {"self": request.url}
    return respond(document)


def create_article(request):
    engine = request.registry["engine"]
    base = request.application_url + "/api/"
    if request.content_type != MEDIA:
        return error(415, "Unsupported Media Type", "use application/vnd.api+json")
    auth = request.headers.get("Authorization", "")
    if not auth.startswith("Bearer "):
        return error(401, "Unauthorized", "a bearer token is needed")
    try:
        body = orjson.loads(request.body)
        data = body["data"]
        attributes = data.get("attributes", {})
        title = attributes["title"]
    except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError):
        return error(400, "Bad Request", "malformed document")
    if data.get("type") != "articles":
        return error(422, "Validation Error", "wrong type")
    if not isinstance(title, str) or not 0 < len(title) <= 255:
        return error(422, "Validation Error", "title is required")
    status = attributes.get("status", "draft")
    if status not in ("draft", "published"):
        return error(422, "Validation Error", "bad status")
    secret_hash = hashlib.sha256(auth[7:].encode()).hexdigest()
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    with engine.begin() as conn:
        owner = conn.execute(
            select(TOKENS.c.user_id).join(USERS, USERS.c.id == TOKENS.c.user_id)
            .where(TOKENS.c.secret_hash == secret_hash, TOKENS.c.expires_at > now, USERS.c.active.is_(True))
        ).first()
        if owner is None:
            return error(401, "Unauthorized", "bad token")
        row = conn.execute(
            insert(ARTICLES).values(title=title, body=attributes.get("body"), status=status, user_id=owner[0],
                                    created_at=now, updated_at=now).returning(*ARTICLE_COLUMNS)
        ).first()
    resource = article(base, row)
    return respond({"jsonapi": JSONAPI, "data": resource, "links": {"self": resource["links"]["self"]}}, 201,
                   {"Location": resource["links"]["self"]})


def make_app(url: str):
    """The WSGI app and its engine."""
    engine = create_engine(url)
    if engine.dialect.name == "sqlite":
        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_connection, _record):
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.close()

    with Configurator() as config:
        config.registry["engine"] = engine
        config.add_route("articles", "/api/articles")
        config.add_route("article", "/api/articles/{id}")
        config.add_view(list_articles, route_name="articles", request_method="GET")
        config.add_view(create_article, route_name="articles", request_method="POST")
        config.add_view(show_article, route_name="article", request_method="GET")
    return config.make_wsgi_app(), engine
