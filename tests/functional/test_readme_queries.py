"""The query examples README.md gives under "Queries through relationships" are answered by the
reference service on the demo data ``make serve`` loads: 200, something found (issue #27: three
of them once answered ``data: []`` there), and the cursor example with a real cursor."""
from __future__ import annotations

import pathlib
import re

from sqlalchemy import select

from jsonapi_blog import initdb
from jsonapi_blog.models import Article, User

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def _examples() -> list[str]:
    section = README.read_text().split("## Queries through relationships", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```text\n(.*?)```", section, re.S)[1]
    return [line.split()[0] for line in block.splitlines() if line.startswith("/api/")]


def test_readme_query_examples_find_something_in_the_demo_data(api, db):
    assert initdb.load_demo(db)
    db.commit()
    # The README's ids are those of a new database; this one's sequences may have moved on.
    admin = db.scalar(select(User.id).where(User.email == "admin@example.com"))
    article = db.scalar(select(Article.id).where(Article.title == "Hello, JSON:API"))
    examples = _examples()
    assert len(examples) >= 8
    for example in examples:
        example = example.replace("[author]=1", f"[author]={admin}").replace("/api/articles/1?", f"/api/articles/{article}?")
        if "<cursor>" in example:
            first = api.get(example.split("&page[comments][after]")[0],
                            headers={"Accept": 'application/vnd.api+json; profile="http://jsonapi.org/profiles/'
                                               'ethanresnick/cursor-pagination/"'}).json
            cursor = first["data"]["relationships"]["comments"]["data"][0]["meta"]["page"]["cursor"]
            example = example.replace("<cursor>", cursor)
        data = api.get(example).json["data"]
        assert data, example
