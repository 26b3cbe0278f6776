"""The per-application schema: mapper facts and caches live on each application's registry, so two
applications in one process share nothing, and readers are keyed by what decides them."""
from __future__ import annotations

import webtest
from pyramid.config import Configurator
from sqlalchemy import String
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from jsonapi_pyramid import Transformer
from jsonapi_pyramid.security import BearerTokenPolicy


class Base(DeclarativeBase):
    pass


class Note(Base):
    __tablename__ = "notes"
    __jsonapi_type__ = "notes"
    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str] = mapped_column(String(20))
    body: Mapped[str] = mapped_column(String(20))


class LabelIsTitle(Transformer):
    attributes = ("label",)
    attribute_map = {"label": "title"}


class LabelIsBody(Transformer):
    attributes = ("label",)
    attribute_map = {"label": "body"}


def _app(tmp_path, name: str, transformer: type[Transformer], **settings):
    """An application over ``Note`` whose transformer is ``transformer``."""
    Note.transformer = classmethod(lambda cls: transformer())
    try:
        config = Configurator(settings={"sqlalchemy.url": f"sqlite:///{tmp_path / name}.sqlite", **settings})
        config.include("jsonapi_pyramid.db")
        config.include("jsonapi_pyramid")
        config.add_jsonapi_resource(Note)
        config.set_security_policy(BearerTokenPolicy(lambda request, secret: None))  # everyone anonymous
        app = config.make_wsgi_app()
    finally:
        del Note.transformer
    engine = app.registry["db.engine"]
    Base.metadata.create_all(engine)
    with engine.begin() as connection:
        connection.execute(Note.__table__.insert(), [{"id": 1, "title": "the title", "body": "the body"}])
    return webtest.TestApp(app, extra_environ={"HTTP_HOST": "example.test"}), app.registry.jsonapi


def test_two_transformers_over_one_model_read_their_own_columns(tmp_path):
    """The reader of an instance depends on the transformer's ``attribute_map``: it was once
    kept per (entity class, names) for the whole process, so the second application showed the
    first one's column."""
    titles, _ = _app(tmp_path, "titles", LabelIsTitle)
    bodies, _ = _app(tmp_path, "bodies", LabelIsBody)
    for _ in range(2):  # the second round reads with the kept readers
        assert titles.get("/api/notes/1").json["data"]["attributes"] == {"label": "the title"}  # an instance
        assert bodies.get("/api/notes/1").json["data"]["attributes"] == {"label": "the body"}
        assert titles.get("/api/notes").json["data"][0]["attributes"] == {"label": "the title"}  # a record
        assert bodies.get("/api/notes").json["data"][0]["attributes"] == {"label": "the body"}
    note = Note(id=2, title="t", body="b")
    assert LabelIsTitle().transform(note, ("label",)) == {"label": "t"}  # made outside the library
    assert LabelIsBody().transform(note, ("label",)) == {"label": "b"}


def test_two_applications_share_nothing(tmp_path):
    first, first_schema = _app(tmp_path, "first", LabelIsTitle)
    second, second_schema = _app(tmp_path, "second", LabelIsTitle)
    first.get("/api/notes")
    first.get("/api/notes/1")
    assert len(first_schema.statements) >= 2  # the page and the item statements were kept ...
    assert len(second_schema.statements) == 0  # ... by the first application only
    one, two = first_schema.get("notes"), second_schema.get("notes")
    assert one is not two
    assert one.owner is not two.owner and one.readers is not two.readers
    assert one.fields == two.fields and one.fields["label"].key == "title"
    second.get("/api/notes/1")
    first_item = [s for (key, *_), (_c, s) in first_schema.statements._entries.items() if key[0] == "item"]
    second_item = [s for (key, *_), (_c, s) in second_schema.statements._entries.items() if key[0] == "item"]
    assert first_item and second_item and first_item[0] is not second_item[0]


def test_mapper_facts_are_computed_once_at_start_up(wsgi_app):
    """The facts every stage reads, on the blog's mapping."""
    from jsonapi_blog.models import Comment, article_tags

    registry = wsgi_app.registry.jsonapi
    articles, comments, profiles, users = (registry.get(t) for t in ("articles", "comments", "userProfiles", "users"))
    author = articles.relationships["author"]  # articles.user_id NOT NULL
    assert author.local_fk is articles.model.__table__.c.user_id
    assert author.target_id_fk is author.local_fk and author.required_fk is author.local_fk
    assert author.required_on_create and not author.nullable and not author.unique
    commenter = comments.relationships["author"]  # comments.user_id NULL (ON DELETE SET NULL)
    assert commenter.nullable and commenter.required_fk is None and not commenter.required_on_create
    assert profiles.relationships["user"].unique  # one profile per user
    article_comments = articles.relationships["comments"]  # comments.article_id NOT NULL
    assert article_comments.members_stay_linked
    assert article_comments.kept_parent_id == (Comment.__table__.c.article_id, None)
    assert users.relationships["articles"].members_stay_linked  # articles.user_id NOT NULL
    tags = articles.relationships["tags"]
    assert tags.kept_parent_id[0] is article_tags.c.article_id and not tags.members_stay_linked
    assert author.kept_parent_id == (None, None)  # kept on the owner's side
    title, created = articles.fields["title"], articles.fields["createdAt"]
    assert (title.key, title.kind, title.nullable) == ("title", "string", False)
    assert (created.key, created.kind) == ("created_at", "datetime")
    assert articles.id_kind == "integer" and articles.entity_attribute("createdAt") == "created_at"


def test_the_root_acl_setting_guards_the_api_node(tmp_path):
    from pyramid.authorization import Allow, Authenticated

    from jsonapi_pyramid import Permission

    app, _ = _app(tmp_path, "private", LabelIsTitle, **{"jsonapi.root_acl": [(Allow, Authenticated, Permission.VIEW)]})
    assert app.get("/api/notes", status=401).json["errors"][0]["status"] == "401"  # anonymous: log in
    public, _ = _app(tmp_path, "public", LabelIsTitle)
    assert public.get("/api/notes").json["data"][0]["id"] == "1"
