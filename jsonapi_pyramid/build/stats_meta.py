"""Statistics, the build stage: what ``stats_sql`` loaded -> the document's ``meta.stats``, and
the statistics profile in ``jsonapi.profile`` (CONTRACT section 10). No SQL, no query parameter."""
from __future__ import annotations

from typing import Any

__all__ = ["PROFILE", "apply_stats"]

#: The profile's URI (``jsonapi.profile`` of answers with ``meta.stats``; the docs' statistics chapter).
PROFILE = "https://jsonapi-pyramid.readthedocs.io/en/latest/statistics.html"


def apply_stats(document: dict[str, Any], found: dict[str, Any] | None) -> dict[str, Any]:
    """``meta.stats`` of ``found`` (``stats_sql.load_stats``) into ``document``, the profile into ``jsonapi.profile``."""
    if found is None:
        return document
    stats = dict(found["stats"])
    if "groups" in found:
        stats["groups"] = [{"key": key, "stats": values} for key, values in found["groups"]]
    document["meta"] = {**document.get("meta", {}), "stats": stats}
    jsonapi = document["jsonapi"]
    document["jsonapi"] = {**jsonapi, "profile": [*jsonapi.get("profile", ()), PROFILE]}
    return document
