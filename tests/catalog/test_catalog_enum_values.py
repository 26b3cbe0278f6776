"""The catalogue's Python enum ``Tier`` (``STANDARD = "standard"``: names that differ from the
values) shows its values wherever a value leaves the database: documents, ``stats`` minima,
maxima and groups, and the cursors of a walk sorted by it (issue 33)."""
from __future__ import annotations

from catalog.models import LibraryCard, Tier

MEDIA_TYPE = "application/vnd.api+json"
CURSOR = f'{MEDIA_TYPE}; profile="http://jsonapi.org/profiles/ethanresnick/cursor-pagination/"'


def test_a_tier_shows_its_value_in_stats_and_walks_by_cursor(api, db):
    tiers = [Tier.GOLD, Tier.BASIC, Tier.STANDARD, Tier.GOLD, Tier.BASIC]
    db.add_all([LibraryCard(number=f"C-{n}", tier=tier) for n, tier in enumerate(tiers)])
    db.commit()
    stats = api.get("/api/cards", params={"stats[tier]": "count,minimum,maximum", "group": "tier"}).json["meta"]["stats"]
    assert stats["tier"] == {"count": 5, "minimum": "standard", "maximum": "basic"}  # as declared: standard, gold, basic
    assert [(g["key"]["tier"], g["stats"]["tier"]["count"]) for g in stats["groups"]] == [
        ("basic", 2), ("gold", 2), ("standard", 1)]  # by the text stored: BASIC, GOLD, STANDARD
    for sort, order in (("tier", ["standard", "gold", "gold", "basic", "basic"]),
                        ("-tier", ["basic", "basic", "gold", "gold", "standard"])):
        seen, url = [], f"/api/cards?sort={sort}&page[size]=2"
        while url:
            document = api.get(url, headers={"Accept": CURSOR}).json
            seen += [item["attributes"]["tier"] for item in document["data"]]
            url = document["links"]["next"]
        assert seen == order, sort
