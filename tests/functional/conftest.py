"""Data for functional tests: the demo blog, and small factories for more."""
from __future__ import annotations

import pytest
from sqlalchemy import event, select

from jsonapi_blog.initdb import load_demo
from jsonapi_blog.models import Article, Comment, Tag, User
from jsonapi_blog.passwords import hash_password
from jsonapi_pyramid import connection as connection_module


@pytest.fixture
def blog(db):
    """The demo data (admin, alice, bob; three articles, one a draft of alice's; comments, tags).

    Returns the entities by handy names."""
    load_demo(db)
    db.commit()
    users = {u.email.split("@")[0]: u for u in db.scalars(select(User))}
    articles = {a.title: a for a in db.scalars(select(Article))}
    return {
        "admin": users["admin"], "alice": users["alice"], "bob": users["bob"],
        "hello": articles["Hello, JSON:API"], "traversal": articles["Traversal in Pyramid"],
        "draft": articles["A draft"],
        "tags": {t.name: t for t in db.scalars(select(Tag))},
        "comments": list(db.scalars(select(Comment).order_by(Comment.id))),
    }


@pytest.fixture
def make_articles(db):
    """``make_articles(n, author, status="published")``: n articles, each with 2 comments and 2 tags."""

    def make(n, author, status="published", comments=2, tags=2):
        tag_objects = [Tag(name=f"bulk-{i}-{author.id}-{n}") for i in range(tags)]
        made = []
        for i in range(n):
            article = Article(title=f"Bulk {i}", body="b", status=status, user=author, tags=list(tag_objects))
            article.comments = [Comment(body=f"c{j}", user=author) for j in range(comments)]
            made.append(article)
        db.add_all(made)
        db.commit()
        return made

    return make


@pytest.fixture
def make_user(db):
    def make(email, name="Someone", password="password-123", active=True):
        user = User(name=name, email=email, password_hash=hash_password(password), active=active)
        db.add(user)
        db.commit()
        return user

    return make


@pytest.fixture
def auth_headers(db):
    """``auth_headers(user)``: an ``Authorization: Bearer`` header for ``user``.

    Stores a token the way the service does (SHA-256 of the secret, with an expiry) without going
    through ``POST /api/tokens``, so tests of other areas do not depend on that endpoint."""
    import datetime as dt
    import hashlib
    import secrets

    from jsonapi_blog.models import Token, utcnow

    def make(user, expires_in=dt.timedelta(hours=1)):
        secret = secrets.token_urlsafe(32)
        db.add(Token(user_id=user.id, secret_hash=hashlib.sha256(secret.encode()).hexdigest(),
                     expires_at=utcnow() + expires_in))
        db.commit()
        return {"Authorization": f"Bearer {secret}"}

    return make


@pytest.fixture
def statements(app):
    """The SQL the module's ``app`` (a WebTest app of its own) sends, whitespace folded. A listener
    of execution events: SQLAlchemy runs every statement while it listens (none on the driver)."""
    engine = app.app.registry["db.engine"]
    seen: list[str] = []

    def record(_conn, _cursor, statement, *_args):
        seen.append(" ".join(statement.split()))

    event.listen(engine, "before_cursor_execute", record)
    yield seen
    event.remove(engine, "before_cursor_execute", record)


@pytest.fixture
def driver_runs(monkeypatch):
    """The SQL of the kept statements the driver runs (``connection._Form.run``), whitespace folded."""
    runs: list[str] = []
    run = connection_module._Form.run

    def counted(self, connection, parameters):
        runs.append(" ".join(self.string.split()))
        return run(self, connection, parameters)

    monkeypatch.setattr(connection_module._Form, "run", counted)
    return runs
