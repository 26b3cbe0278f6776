"""The query examples README.md gives under "Queries through relationships" are answered by the
reference service (200, and the cursor example with a real cursor)."""
from __future__ import annotations

import pathlib
import re

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def _examples() -> list[str]:
    section = README.read_text().split("## Queries through relationships", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```text\n(.*?)```", section, re.S)[1]
    return [line.split()[0] for line in block.splitlines() if line.startswith("/api/")]


def test_readme_query_examples_are_answered(api, blog, make_articles):
    make_articles(3, blog["alice"], comments=2)
    article = api.get("/api/articles?page[size]=1").json["data"][0]["id"]
    examples = _examples()
    assert len(examples) >= 8
    for example in examples:
        example = example.replace("/api/articles/7", f"/api/articles/{article}")
        if "<cursor>" in example:
            first = api.get(example.split("&page[comments][after]")[0],
                            headers={"Accept": 'application/vnd.api+json; profile="http://jsonapi.org/profiles/'
                                               'ethanresnick/cursor-pagination/"'}).json
            cursor = first["data"]["relationships"]["comments"]["data"][0]["meta"]["page"]["cursor"]
            example = example.replace("<cursor>", cursor)
        assert api.get(example).status_int == 200, example
