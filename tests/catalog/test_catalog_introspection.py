"""The catalogue's resource types as introspectables and through ``jsonapi-pyramid-resources``:
UUID and text keys, an association object, inheritance (introspection.py works for any model)."""
from __future__ import annotations

from jsonapi_pyramid import introspection, resources_command


def test_every_type_of_the_catalogue_is_an_introspectable_with_its_path(wsgi_app):
    jsonapi = wsgi_app.registry.jsonapi
    entries = wsgi_app.registry.introspector.get_category(introspection.RESOURCE_TYPES)
    found = {entry["introspectable"].discriminator: entry["introspectable"] for entry in entries}
    assert sorted(found) == sorted(jsonapi.types) and len(found) > 5
    for name, intr in found.items():
        assert intr["definition"] is jsonapi.types[name] and intr["path"] == f"/api/{name}"
        assert intr.action_info.file.endswith("catalog/resources.py")


def test_the_command_lists_the_catalogue(tmp_path, capsys, database_url, wsgi_app):
    ini = tmp_path / "catalog.ini"
    ini.write_text(f"[app:main]\nuse = call:catalog:main\nsqlalchemy.url = {database_url}\n")
    assert resources_command.main([str(ini)]) == 0
    rows = capsys.readouterr().out.splitlines()[2:]
    assert [row.split()[0] for row in rows] == sorted(wsgi_app.registry.jsonapi.types)
    for row in rows:
        type_name, model, path = row.split()[:3]
        definition = wsgi_app.registry.jsonapi.types[type_name]
        assert (model, path) == (f"{definition.model.__module__}.{definition.model.__qualname__}", f"/api/{type_name}")
