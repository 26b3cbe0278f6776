"""``jsonapi-pyramid-initdb``: migrations, demo data once, deterministic scale data."""
from __future__ import annotations

from sqlalchemy import func, select

from jsonapi_blog import initdb
from jsonapi_blog.models import Article, Comment, Tag, User, article_tags


def test_cli_migrates_and_loads_demo_once(tmp_path, capsys):
    database = tmp_path / "blog.sqlite"
    ini = tmp_path / "test.ini"
    ini.write_text(f"[app:main]\nuse = egg:jsonapi_blog\nsqlalchemy.url = sqlite:///{database}\n")
    assert initdb.main([str(ini), "--demo", "--scale", "30"]) == 0
    assert "demo data loaded" in capsys.readouterr().out
    assert initdb.main([str(ini), "--demo"]) == 0
    assert "demo data already present" in capsys.readouterr().out
    from sqlalchemy import create_engine

    engine = create_engine(f"sqlite:///{database}")
    with engine.connect() as connection:
        assert connection.scalar(select(func.count()).select_from(Article.__table__)) == 3 + 30
        assert connection.scalar(select(func.count()).where(User.email == "admin@example.com")) == 1
    engine.dispose()


def _snapshot(db):
    return (
        db.execute(select(Article.title, Article.status, Article.user_id).order_by(Article.id)).all(),
        db.execute(select(Comment.article_id, Comment.user_id).order_by(Comment.id)).all(),
        db.execute(select(article_tags.c.article_id, article_tags.c.tag_id)
                   .order_by(article_tags.c.article_id, article_tags.c.tag_id)).all(),
    )


def test_scale_data_is_deterministic_and_shaped_as_promised(db):
    initdb.load_scale(db, 200)
    initdb._reset_sequences(db)
    db.commit()
    first = _snapshot(db)
    assert len(first[0]) == 200
    assert db.scalar(select(func.count()).select_from(User)) == 20  # N/10 authors
    per_article_comments = db.execute(select(Comment.article_id, func.count()).group_by(Comment.article_id)).all()
    assert all(0 <= n <= 5 for _, n in per_article_comments)
    per_article_tags = dict(db.execute(select(article_tags.c.article_id, func.count()).group_by(article_tags.c.article_id)).all())
    assert len(per_article_tags) == 200 and all(1 <= n <= 3 for n in per_article_tags.values())
    # the same seed gives the same data
    for table in (article_tags, Comment.__table__, Article.__table__, Tag.__table__, User.__table__):
        db.execute(table.delete())
    db.commit()
    initdb.load_scale(db, 200)
    db.commit()
    second = _snapshot(db)
    assert second == first


def test_ids_keep_counting_after_bulk_load(db):
    initdb.load_scale(db, 20)
    initdb._reset_sequences(db)
    db.commit()
    author = db.scalars(select(User)).first()
    article = Article(title="after", user=author)
    db.add(article)
    db.commit()
    assert article.id == 21
