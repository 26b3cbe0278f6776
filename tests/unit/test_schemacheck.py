"""``jsonapi-pyramid-schema check OLD NEW`` (CONTRACT section 12; ``jsonapi_pyramid.schemacheck``):
one test per kind of breaking change and per addition, on a small schema of the shape
``clientschema.schema_of`` gives; then the command's exit codes."""
from __future__ import annotations

import copy

import orjson
import pytest

from jsonapi_pyramid import schemacli
from jsonapi_pyramid.schemacheck import SchemaError, compare_schemas

ATOMIC = "https://jsonapi.org/ext/atomic"
STATS = "https://jsonapi-pyramid.readthedocs.io/en/latest/statistics.html"


def _attribute(**facts):
    return {"type": "string", "format": None, "nullable": False, "readOnly": False, "writeOnly": False,
            "requiredOnCreate": False, "filter": ["eq", "ne", "contains"], "sortable": True,
            "stats": ["count", "minimum", "maximum"], **facts}


def _relationship(**facts):
    return {"toMany": False, "types": ["users"], "nullable": False, "writable": True, "includable": True,
            "filterable": True, "filter": {}, "sort": [], **facts}


BASE = {
    "types": {
        "articles": {
            "attributes": {"title": _attribute(requiredOnCreate=True), "body": _attribute(nullable=True),
                           "createdAt": _attribute(format="date-time", readOnly=True)},
            "relationships": {"author": _relationship(filter={"author": ["eq", "in"], "author.name": ["eq", "contains"]},
                                                      sort=["author.name"]),
                              "tags": _relationship(toMany=True, types=["tags"], sort=["tags.count"])},
            "operations": [{"name": "publish", "on": "item", "method": "POST"}],
        },
        "tags": {"attributes": {"name": _attribute()}, "relationships": {}, "operations": []},
        "users": {"attributes": {"name": _attribute()}, "relationships": {}, "operations": []},
    },
    "profiles": [STATS],
    "extensions": [ATOMIC],
}


def changed(change):
    """A copy of ``BASE`` that ``change(types)`` altered."""
    new = copy.deepcopy(BASE)
    change(new["types"])
    return new


def breaking(change):
    return compare_schemas(BASE, changed(change))[1]


def added(change):
    additions, breaks = compare_schemas(BASE, changed(change))
    assert breaks == []
    return additions


def test_the_same_schema_is_compatible_and_adds_nothing():
    assert compare_schemas(BASE, copy.deepcopy(BASE)) == ([], [])


# -- breaking changes: one per kind of CONTRACT section 12 ------------------------------------------

def test_a_type_removed_breaks():
    assert breaking(lambda t: t.pop("tags")) == ["BREAKING tags: type removed"]


def test_an_attribute_removed_breaks():
    assert breaking(lambda t: t["articles"]["attributes"].pop("body")) == ["BREAKING articles.body: attribute removed"]


def test_a_relationship_removed_breaks():
    assert breaking(lambda t: t["articles"]["relationships"].pop("tags")) == [
        "BREAKING articles.tags: relationship removed"]


def test_an_operation_removed_breaks():
    assert breaking(lambda t: t["articles"]["operations"].clear()) == [
        "BREAKING articles.publish: operation POST on the item removed"]


def test_an_operation_moved_to_another_method_breaks_and_adds():
    additions, breaks = compare_schemas(BASE, changed(lambda t: t["articles"]["operations"][0].update(method="PUT")))
    assert breaks == ["BREAKING articles.publish: operation POST on the item removed"]
    assert additions == ["added articles.publish: operation PUT on the item"]


def test_a_filter_operator_removed_breaks():
    assert breaking(lambda t: t["articles"]["attributes"]["title"].update(filter=["eq", "ne"])) == [
        "BREAKING articles.title: filter operator 'contains' removed"]


def test_every_filter_operator_or_stats_function_removed_is_one_line():
    assert breaking(lambda t: t["articles"]["attributes"]["title"].update(filter=[], stats=[])) == [
        "BREAKING articles.title: no longer filterable (was contains, eq, ne)",
        "BREAKING articles.title: no statistics left (was count, maximum, minimum)"]


def test_a_sort_field_removed_breaks():
    assert breaking(lambda t: t["articles"]["attributes"]["title"].update(sortable=False)) == [
        "BREAKING articles.title: sort field removed"]


def test_a_stats_function_removed_breaks():
    assert breaking(lambda t: t["articles"]["attributes"]["title"].update(stats=["count"])) == [
        "BREAKING articles.title: stats function 'maximum' removed",
        "BREAKING articles.title: stats function 'minimum' removed"]


def test_an_attribute_type_changed_breaks():
    assert breaking(lambda t: t["articles"]["attributes"]["title"].update(type="integer")) == [
        "BREAKING articles.title: type changed from 'string' to 'integer'"]


def test_an_attribute_format_changed_breaks():
    assert breaking(lambda t: t["articles"]["attributes"]["createdAt"].update(format="date")) == [
        "BREAKING articles.createdAt: format changed from 'date-time' to 'date'"]
    assert breaking(lambda t: t["articles"]["attributes"]["title"].update(format="email")) == [
        "BREAKING articles.title: format changed from none to 'email'"]


def test_an_attribute_made_read_only_breaks():
    assert breaking(lambda t: t["articles"]["attributes"]["title"].update(readOnly=True)) == [
        "BREAKING articles.title: made read-only"]


def test_an_attribute_no_longer_shown_breaks():
    assert breaking(lambda t: t["articles"]["attributes"]["title"].update(writeOnly=True)) == [
        "BREAKING articles.title: no longer shown (write-only)"]


def test_an_attribute_newly_required_on_create_breaks():
    assert breaking(lambda t: t["articles"]["attributes"]["body"].update(requiredOnCreate=True)) == [
        "BREAKING articles.body: newly required on create"]


def test_a_new_attribute_required_on_create_breaks_and_is_added():
    additions, breaks = compare_schemas(BASE, changed(
        lambda t: t["articles"]["attributes"].update(slug=_attribute(requiredOnCreate=True))))
    assert additions == ["added articles.slug: attribute"]
    assert breaks == ["BREAKING articles.slug: new attribute required on create"]


def test_an_attribute_made_nullable_breaks():
    assert breaking(lambda t: t["articles"]["attributes"]["title"].update(nullable=True)) == [
        "BREAKING articles.title: made nullable (readers may meet null)"]


def test_a_write_only_attribute_made_nullable_is_compatible():
    old = changed(lambda t: t["articles"]["attributes"]["title"].update(writeOnly=True))
    new = copy.deepcopy(old)
    new["types"]["articles"]["attributes"]["title"]["nullable"] = True
    assert compare_schemas(old, new) == ([], [])


def test_a_to_one_made_nullable_breaks():
    assert breaking(lambda t: t["articles"]["relationships"]["author"].update(nullable=True)) == [
        "BREAKING articles.author: to-one made nullable (readers may meet null)"]


def test_a_relationship_cardinality_changed_breaks():
    assert breaking(lambda t: t["articles"]["relationships"]["author"].update(toMany=True)) == [
        "BREAKING articles.author: cardinality changed from to-one to to-many"]
    assert breaking(lambda t: t["articles"]["relationships"]["tags"].update(toMany=False)) == [
        "BREAKING articles.tags: cardinality changed from to-many to to-one"]


def test_a_relationship_target_type_removed_breaks():
    old = changed(lambda t: t["articles"]["relationships"]["author"].update(types=["admins", "users"]))
    assert compare_schemas(old, BASE) == ([], ["BREAKING articles.author: target type 'admins' removed"])


@pytest.mark.parametrize("fact", ["writable", "includable", "filterable"])
def test_a_relationship_no_longer_writable_includable_or_filterable_breaks(fact):
    assert breaking(lambda t: t["articles"]["relationships"]["author"].update({fact: False})) == [
        f"BREAKING articles.author: no longer {fact}"]


def test_a_filter_path_through_a_relationship_removed_breaks():
    assert breaking(lambda t: t["articles"]["relationships"]["author"]["filter"].pop("author.name")) == [
        "BREAKING articles.author: filter path 'author.name' removed"]


def test_a_filter_operator_of_a_path_through_a_relationship_removed_breaks():
    assert breaking(lambda t: t["articles"]["relationships"]["author"]["filter"].update({"author.name": ["eq"]})) == [
        "BREAKING articles.author: filter operator 'contains' of 'author.name' removed"]


def test_a_sort_key_through_a_relationship_removed_breaks():
    assert breaking(lambda t: t["articles"]["relationships"]["tags"].update(sort=[])) == [
        "BREAKING articles.tags: sort key 'tags.count' removed"]


@pytest.mark.parametrize("key, uri", [("profiles", STATS), ("extensions", ATOMIC)])
def test_a_profile_or_extension_removed_breaks(key, uri):
    new = copy.deepcopy(BASE)
    new[key] = []
    assert compare_schemas(BASE, new) == ([], [f"BREAKING {key}: {uri} removed"])


def test_every_breaking_change_is_reported_in_a_stable_order():
    def change(types):
        types.pop("users")
        types["articles"]["attributes"]["title"].update(type="integer", readOnly=True)
        types["articles"]["relationships"].pop("tags")
    assert breaking(change) == [
        "BREAKING users: type removed",
        "BREAKING articles.tags: relationship removed",
        "BREAKING articles.title: type changed from 'string' to 'integer'",
        "BREAKING articles.title: made read-only",
    ]


# -- additions: compatible ------------------------------------------------------------------------

def test_a_type_added_is_compatible():
    assert added(lambda t: t.update(comments={"attributes": {"body": _attribute(requiredOnCreate=True)},
                                              "relationships": {}, "operations": []})) == ["added comments"]


def test_an_optional_attribute_added_is_compatible():
    assert added(lambda t: t["articles"]["attributes"].update(slug=_attribute())) == ["added articles.slug: attribute"]


def test_a_relationship_added_is_compatible():
    assert added(lambda t: t["articles"]["relationships"].update(editor=_relationship(nullable=True))) == [
        "added articles.editor: relationship"]


def test_an_operation_added_is_compatible():
    assert added(lambda t: t["articles"]["operations"].append({"name": "archive", "on": "collection", "method": "POST"})) == [
        "added articles.archive: operation POST on the collection"]


def test_a_filter_operator_sort_field_stats_function_and_target_type_added_are_compatible():
    def change(types):
        types["articles"]["attributes"]["title"].update(filter=["eq", "ne", "contains", "startswith"], stats=[
            "count", "minimum", "maximum", "sum"])
        types["articles"]["attributes"]["createdAt"].update(sortable=False)
        types["articles"]["relationships"]["author"].update(types=["admins", "users"])
    old = changed(lambda t: t["articles"]["attributes"]["createdAt"].update(sortable=False))
    new = changed(change)
    new["types"]["articles"]["attributes"]["body"]["sortable"] = True
    old["types"]["articles"]["attributes"]["body"]["sortable"] = False
    assert compare_schemas(old, new) == ([
        "added articles.body: sort field",
        "added articles.title: filter operator 'startswith'",
        "added articles.title: stats function 'sum'",
        "added articles.author: target type 'admins'",
    ], [])


def test_a_filter_path_operator_and_sort_key_through_a_relationship_added_are_compatible():
    def change(types):
        author = types["articles"]["relationships"]["author"]
        author["filter"].update({"author.email": ["eq"], "author": ["eq", "in", "nin"]})
        author["sort"].append("author.articles.count")
    assert added(change) == [
        "added articles.author: filter path 'author.email'",
        "added articles.author: filter operator 'nin' of 'author'",
        "added articles.author: sort key 'author.articles.count'",
    ]


def test_relaxations_are_compatible():
    """Made writable, no longer required on create, no longer nullable, shown again: no line."""
    old = changed(lambda t: t["articles"]["attributes"]["body"].update(readOnly=True, writeOnly=True, requiredOnCreate=True))
    new = changed(lambda t: t["articles"]["attributes"]["body"].update(nullable=False))
    assert compare_schemas(old, new) == ([], [])


def test_a_document_that_is_not_a_schema_is_refused():
    for document in ({}, [], {"types": []}, {"types": {"articles": 1}}, {"types": {"articles": {"attributes": []}}},
                     {"types": {"articles": {"operations": {}}}}, {"types": {"articles": {"operations": [1]}}},
                     {"types": {"articles": {"relationships": {"author": {"filter": []}}}}}):
        with pytest.raises(SchemaError):
            compare_schemas(BASE, document)


# -- the command ----------------------------------------------------------------------------------

def _write(path, schema):
    path.write_bytes(orjson.dumps(schema))
    return str(path)


def test_the_command_exits_0_and_prints_additions_when_compatible(tmp_path, capsys):
    new = changed(lambda t: t["articles"]["attributes"].update(slug=_attribute()))
    assert schemacli.main(["check", _write(tmp_path / "old.json", BASE), _write(tmp_path / "new.json", new)]) == 0
    assert capsys.readouterr().out == "added articles.slug: attribute\n"


def test_the_command_exits_1_with_one_line_per_breaking_change(tmp_path, capsys):
    new = changed(lambda t: (t.pop("tags"), t["articles"]["attributes"]["title"].update(readOnly=True)))
    assert schemacli.main(["check", _write(tmp_path / "old.json", BASE), _write(tmp_path / "new.json", new)]) == 1
    assert capsys.readouterr().out == "BREAKING tags: type removed\nBREAKING articles.title: made read-only\n"


def test_the_command_exits_2_on_an_unreadable_file(tmp_path, capsys):
    good = _write(tmp_path / "good.json", BASE)
    (tmp_path / "broken.json").write_text('{"types": ')
    (tmp_path / "list.json").write_text("[]")
    for other in (str(tmp_path / "missing.json"), str(tmp_path / "broken.json"), str(tmp_path / "list.json")):
        assert schemacli.main(["check", good, other]) == 2
        assert schemacli.main(["check", other, good]) == 2
        captured = capsys.readouterr()
        assert captured.out == "" and captured.err.startswith("jsonapi-pyramid-schema check: ")

