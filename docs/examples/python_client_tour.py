"""A tour of a generated Python client of the reference service (``blogclient``), as a script uses it.

Generated with ``jsonapi-pyramid-client development.ini --lang python --out . --name blogclient``;
this file is type-checked with the package by ``mypy --strict`` and run against the service by
tests/functional/test_python_client.py.
"""
from __future__ import annotations

from blogclient import Client, JsonApiError, Tags, Users


def tour(api: Client) -> list[str]:
    """Every kind of call, returning what it saw, one line each."""
    seen = []
    page = api.articles.list(include=["author", "tags"], fields={"articles": ["title", "author", "tags"]},
                             filter={"status": "published", "author.name": {"icontains": "ali"}},
                             sort=["-comments.count", "-createdAt"], page={"size": 5})
    first = page.data[0]
    seen.append(f"list: {first.attributes.title} by {first.relationships.author}")
    authors = [resource for resource in page.included if isinstance(resource, Users)]
    seen.append(f"included: {sorted({resource.type for resource in page.included})}, author {authors[0].attributes.name}")

    one = api.articles.get(first.id, include=["comments.author"])
    seen.append(f"get: {one.data.attributes.title}, {len(one.included)} included, etag {one.etag is not None}")
    plain = api.articles.get(first.id)
    seen.append(f"unchanged: {api.articles.get_if_changed(first.id, plain.etag or '') is None}")

    tag = api.tags.create(attributes={"name": "from-python"})
    seen.append(f"created: {tag.data.type} {tag.data.attributes.name}")
    updated = api.articles.update(first.id, attributes={"title": "Retitled"},
                                  relationships={"tags": [{"type": "tags", "id": tag.data.id}]}, if_match=plain.etag)
    seen.append(f"updated: {updated.data.attributes.title}, tags {api.articles.relationships.tags.get(first.id)}")
    try:
        api.articles.update(first.id, attributes={"title": "Again"}, if_match=plain.etag)
    except JsonApiError as error:
        seen.append(f"stale tag: {error.status} {error.errors[0]['title']}")
    api.articles.relationships.tags.remove(first.id, [{"type": "tags", "id": tag.data.id}])
    api.tags.delete(tag.data.id)
    try:
        api.tags.get(tag.data.id)
    except JsonApiError as error:
        seen.append(f"deleted: {error.status}")
    titles = [article.attributes.title for article in api.articles.iterate(sort=["title"], size=1)]
    seen.append(f"iterated: {len(titles)} articles, one page each")

    # sideposting: an article and a new tag in one request, the tag named by its lid
    posted = api.articles.create(attributes={"title": "Sideposted", "body": "Two at once.", "status": "published"},
                                 relationships={"tags": [{"type": "tags", "lid": "new-tag"}]},
                                 included=[{"type": "tags", "lid": "new-tag", "attributes": {"name": "sideposted"}}])
    made = [resource for resource in posted.included if isinstance(resource, Tags) and resource.lid == "new-tag"]
    seen.append(f"sideposted: {posted.data.attributes.title} with the tag {made[0].attributes.name} ({made[0].id})")
    return seen
