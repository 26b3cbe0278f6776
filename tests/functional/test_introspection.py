"""What the library registers is registered by configuration actions with Pyramid introspectables
(``jsonapi_pyramid/introspection.py``): ``registry.introspector`` lists the blog's resource types
with their options and custom operations, its write checks, the registry, the profiles and the
extension; ``jsonapi-pyramid-resources INI`` prints them as a table."""
from __future__ import annotations

import os

import pytest
from pyramid.config import Configurator
from pyramid.exceptions import ConfigurationConflictError

from jsonapi_blog import resources, security
from jsonapi_blog.models import Article, Token, User
from jsonapi_blog.throttling import prepare_atomic_signups
from jsonapi_pyramid import introspection, resources_command
from jsonapi_pyramid.contract import ResourceOptions
from jsonapi_pyramid.negotiation import ATOMIC_EXT
from jsonapi_pyramid.pagination import PROFILE
from jsonapi_pyramid.preconditions import if_match_check
from jsonapi_pyramid.write.locking import serialise_set_replaces


def category(registry, name: str) -> dict:
    """discriminator -> (introspectable, its related introspectables) of one category."""
    return {entry["introspectable"].discriminator: (entry["introspectable"], entry["related"])
            for entry in registry.introspector.get_category(name, [])}


def test_every_resource_type_of_the_blog_with_its_options(wsgi_app):
    types = category(wsgi_app.registry, introspection.RESOURCE_TYPES)
    jsonapi = wsgi_app.registry.jsonapi
    assert sorted(types) == sorted(jsonapi.types) == ["articles", "comments", "roles", "tags", "tokens", "userProfiles", "users"]
    for name, (intr, _related) in types.items():
        assert intr["definition"] is jsonapi.types[name]  # the object requests use
        assert intr["model"] is jsonapi.types[name].model
        assert intr["path"] == f"/api/{name}"
        assert set(ResourceOptions.__annotations__) <= set(intr.keys())  # every option is an item
    articles, _related = types["articles"]
    assert articles["given"] == ("acl", "create", "filterable", "relationship_defaults", "sortable", "update", "visible")
    assert articles["acl"] is resources.article_acl and articles["visible"] is resources.visible_articles
    assert articles["filterable"][:2] == ("title", "body") and articles["client_ids"] is None  # not given
    assert types["userProfiles"][0]["id_format"] == "uuid" and types["userProfiles"][0]["client_ids"] is True
    assert types["tokens"][0]["filterable"] == ()
    assert articles.title == "articles" and articles.action_info.file.endswith("jsonapi_blog/resources.py")


def test_every_custom_operation_of_the_blog_related_to_its_type(wsgi_app):
    operations = category(wsgi_app.registry, introspection.OPERATIONS)
    registered = {(definition.model, on, name, method): operation for definition in wsgi_app.registry.jsonapi.types.values()
                  for (on, name, method), operation in definition.operations.items()}
    assert set(operations) == set(registered) == {(User, "item", "activate", "POST"),
                                                  (User, "collection", "activate", "POST"),
                                                  (Token, "collection", "", "POST")}
    for key, (intr, related) in operations.items():
        assert intr["view"] is registered[key].view and intr["permission"] == registered[key].permission
        assert [(other.category_name, other.discriminator) for other in related] == \
            [(introspection.RESOURCE_TYPES, intr["type"])]
    assert operations[(User, "item", "activate", "POST")][0]["conditional"] is True
    assert operations[(Token, "collection", "", "POST")][0]["validate"] is security.read_credentials
    users = dict(category(wsgi_app.registry, introspection.RESOURCE_TYPES))["users"][1]
    assert sorted(other["on"] for other in users) == ["collection", "item"]  # the type lists its operations


def test_write_checks_registry_profiles_and_extension(wsgi_app):
    checks = category(wsgi_app.registry, introspection.WRITE_CHECKS)
    assert set(checks) == {serialise_set_replaces, if_match_check, prepare_atomic_signups}
    assert wsgi_app.registry.jsonapi.write_checks == (serialise_set_replaces, if_match_check, prepare_atomic_signups)
    (registry, _related), = category(wsgi_app.registry, introspection.REGISTRY).values()
    assert registry["registry"] is wsgi_app.registry.jsonapi and registry["settings"]["root_name"] == "api"
    assert registry["settings"]["cursor_secret"] == "(hidden)" != wsgi_app.registry.jsonapi.settings["cursor_secret"]
    assert PROFILE in category(wsgi_app.registry, introspection.PROFILES)
    assert set(category(wsgi_app.registry, introspection.EXTENSIONS)) == {ATOMIC_EXT}


def test_a_type_registered_twice_is_a_configuration_conflict():
    config = Configurator(settings={"sqlalchemy.url": "sqlite://"})
    config.include("jsonapi_pyramid.db")
    config.include("jsonapi_pyramid")
    config.add_jsonapi_resource(Article)
    config.add_jsonapi_resource(Article)
    with pytest.raises(ConfigurationConflictError, match="articles"):
        config.commit()


def test_registry_jsonapi_is_set_when_the_configuration_commits():
    config = Configurator(settings={"sqlalchemy.url": "sqlite://"})
    config.include("jsonapi_pyramid.db")
    config.include("jsonapi_pyramid")
    assert not hasattr(config.registry, "jsonapi")
    pending = config.jsonapi_registry()
    config.commit()
    assert config.registry.jsonapi is pending
    config.registry["db.engine"].dispose()


def test_the_command_prints_every_type_with_its_path_options_and_operations(tmp_path, capsys, database_url):
    ini = tmp_path / "app.ini"
    ini.write_text(f"[app:main]\nuse = egg:jsonapi_blog\nsqlalchemy.url = {database_url}\n")
    os.environ.pop("DATABASE_URL", None)
    assert resources_command.main([str(ini)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["Type", "Model", "Path", "Options", "Operations"]
    assert set(lines[1]) == {"-", " "}
    rows = {line.split()[0]: line for line in lines[2:]}
    assert sorted(rows) == ["articles", "comments", "roles", "tags", "tokens", "userProfiles", "users"]
    assert rows["users"].split()[1:3] == ["jsonapi_blog.models.User", "/api/users"]
    assert rows["users"].endswith("POST /api/users/activate, POST /api/users/{id}/activate")
    assert "acl, apply, create, filterable, restricted, sortable" in rows["users"]
    assert rows["tokens"].endswith("POST /api/tokens") and rows["tags"].endswith(" -")
    starts = {line.index("/api/") for line in lines[2:]}
    assert len(starts) == 1  # the Path column is aligned
