"""``jsonapi-pyramid-initdb INI [--demo] [--scale N]``: migrate to head, then load data.

``--demo`` adds the demo accounts and a small blog (once: a database that has them is left as it
is). ``--scale N`` adds N deterministic articles with 0-5 comments and 1-3 tags each, their
authors spread over N/10 users, for benchmarks.
"""
from __future__ import annotations

import argparse
import datetime as dt
import random
import sys

from alembic import command
from alembic.config import Config
from pyramid.paster import get_appsettings, setup_logging
from sqlalchemy import create_engine, func, insert, select, text
from sqlalchemy.orm import Session

from . import database_url
from .models import Article, Comment, Role, Tag, User, UserProfile, article_tags
from .passwords import hash_password

DEMO_ACCOUNTS = (
    # email, name, password, active, admin
    ("admin@example.com", "Admin", "admin-password", True, True),
    ("alice@example.com", "Alice", "alice-password", True, False),
    ("bob@example.com", "Bob", "bob-password", False, False),
)


def alembic_config(url: str | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", "jsonapi_blog:migrations")
    if url:
        config.set_main_option("sqlalchemy.url", url)
    return config


def migrate(engine) -> None:
    """Upgrade the database behind ``engine`` to the newest migration."""
    config = alembic_config()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "head")


def load_demo(session: Session) -> bool:
    """The demo accounts and a small blog; False when they are there already."""
    if session.scalar(select(User.id).where(User.email == "admin@example.com")) is not None:
        return False
    admin_role = Role(name="admin", description="May do everything.")
    session.add(Role(name="editor", description="Writes articles."))
    users = {}
    for email, name, password, active, admin in DEMO_ACCOUNTS:
        user = User(name=name, email=email, password_hash=hash_password(password), active=active)
        if admin:
            user.roles.append(admin_role)
        users[name] = user
        session.add(user)
    python, pyramid, jsonapi = Tag(name="python"), Tag(name="pyramid"), Tag(name="json-api")
    first = Article(title="Hello, JSON:API", body="Resources, relationships and compound documents.",
                    status="published", user=users["Alice"], tags=[jsonapi, pyramid])
    second = Article(title="Traversal in Pyramid", body="Contexts all the way down.", status="published",
                     user=users["Admin"], tags=[pyramid, python])
    draft = Article(title="A draft", body="Not ready yet.", status="draft", user=users["Alice"], tags=[python])
    session.add_all([first, second, draft])
    session.add_all([
        Comment(body="Nice introduction.", article=first, user=users["Admin"]),
        Comment(body="What about cursor pagination?", article=first, user=users["Bob"]),
        Comment(body="Traversal is underrated.", article=second, user=users["Alice"]),
    ])
    session.add(UserProfile(user=users["Alice"], bio="Writes about APIs.", website="https://example.com/alice",
                            birthday=dt.date(1990, 4, 1)))
    session.flush()
    return True


def load_scale(session: Session, count: int, seed: int = 20261122) -> None:
    """``count`` deterministic articles (bulk inserts: 10,000 load in seconds)."""
    rng = random.Random(seed)
    start = dt.datetime(2025, 1, 1)
    n_users = max(1, count // 10)
    first_user = (session.scalar(select(func.max(User.id))) or 0) + 1
    # One hash for every generated account: hashing thousands of passwords would take minutes.
    password_hash = hash_password("scale-password")
    session.execute(insert(User), [
        {"id": first_user + i, "name": f"User {first_user + i}", "email": f"user{first_user + i}@scale.example.com",
         "password_hash": password_hash, "active": True, "created_at": start, "updated_at": start}
        for i in range(n_users)
    ])
    first_tag = (session.scalar(select(func.max(Tag.id))) or 0) + 1
    n_tags = 50
    session.execute(insert(Tag), [{"id": first_tag + i, "name": f"tag-{first_tag + i}"} for i in range(n_tags)])
    first_article = (session.scalar(select(func.max(Article.id))) or 0) + 1
    first_comment = (session.scalar(select(func.max(Comment.id))) or 0) + 1
    articles, comments, links = [], [], []
    comment_id = first_comment
    for i in range(count):
        article_id = first_article + i
        created = start + dt.timedelta(minutes=7 * i)
        author = first_user + rng.randrange(n_users)
        articles.append({
            "id": article_id, "title": f"Article {article_id}", "body": f"Body of article {article_id}. " * 4,
            "status": "published" if rng.random() < 0.9 else "draft", "user_id": author,
            "created_at": created, "updated_at": created,
        })
        for tag in rng.sample(range(n_tags), rng.randint(1, 3)):
            links.append({"article_id": article_id, "tag_id": first_tag + tag})
        for _ in range(rng.randint(0, 5)):
            comments.append({"id": comment_id, "body": f"Comment {comment_id}", "article_id": article_id,
                             "user_id": first_user + rng.randrange(n_users), "created_at": created})
            comment_id += 1
    for table, rows in ((Article, articles), (Comment, comments), (article_tags, links)):
        for chunk in range(0, len(rows), 5000):
            session.execute(insert(table), rows[chunk:chunk + 5000])


def _reset_sequences(session: Session) -> None:
    """Bulk inserts name their ids; PostgreSQL's sequences must then move past them."""
    if session.bind.dialect.name != "postgresql":
        return
    for table in ("users", "tags", "articles", "comments", "roles", "tokens"):
        session.execute(text(
            f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), COALESCE((SELECT MAX(id) FROM {table}), 0) + 1, false)"
        ))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="jsonapi-pyramid-initdb", description=__doc__.split("\n\n")[0])
    parser.add_argument("config_uri", help="the ini file, e.g. development.ini")
    parser.add_argument("--demo", action="store_true", help="add the demo accounts and a small blog")
    parser.add_argument("--scale", type=int, default=0, metavar="N", help="add N deterministic articles")
    args = parser.parse_args(argv)
    setup_logging(args.config_uri)
    settings = get_appsettings(args.config_uri)
    engine = create_engine(database_url(settings))
    migrate(engine)
    with Session(engine) as session, session.begin():
        if args.demo:
            print("demo data loaded" if load_demo(session) else "demo data already present")
        if args.scale:
            load_scale(session, args.scale)
            _reset_sequences(session)
            print(f"{args.scale} articles loaded")
    if args.scale and engine.dialect.name == "postgresql":
        # Statistics for the planner now, not when autovacuum gets to it: without them PostgreSQL
        # plans every query against the bulk-loaded tables as if they were nearly empty.
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.execute(text("ANALYZE"))
    engine.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main())
