"""The OpenAPI document: valid, complete both ways, its examples accepted, and the service keeps
to it under schemathesis (short here; ``make fuzz`` runs it long)."""
from __future__ import annotations

import json
import math
import os
import re
import time

import hypothesis
import pytest
import schemathesis
from openapi_spec_validator import validate
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from sqlalchemy import select

from jsonapi_blog.models import Token
from jsonapi_pyramid import openapi
from jsonapi_pyramid.contract import get_registry
from jsonapi_pyramid.traversal import ApiRoot, Collection, Item, Related, Root, ToManyLinkage, ToOneLinkage

MEDIA_TYPE = "application/vnd.api+json"
FUZZ = bool(os.environ.get("JSONAPI_FUZZ"))


@pytest.fixture
def document(api):
    response = api.get("/api/openapi.json", status=200)
    assert response.content_type == "application/json"
    return response.json


@pytest.fixture
def admin_headers(blog, auth_headers):
    return auth_headers(blog["admin"])


def test_document_is_valid_openapi_3_1(document):
    validate(document)
    assert document["openapi"].startswith("3.1")
    assert document["components"]["securitySchemes"]["bearerAuth"] == {
        "type": "http", "scheme": "bearer", "description": document["components"]["securitySchemes"]["bearerAuth"]["description"]}


def test_document_is_built_once_and_cached(wsgi_app, api):
    first = api.get("/api/openapi.json").body
    assert api.get("/api/openapi.json").body is not None
    assert openapi.get_document(wsgi_app.registry) is openapi.get_document(wsgi_app.registry)
    assert json.loads(first) == openapi.get_document(wsgi_app.registry)


def _template(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "{}", path)


def _served(wsgi_app) -> set[tuple[str, str]]:
    """(path template, method) of every view the application registered, from Pyramid itself."""
    registry = get_registry(wsgi_app.registry)
    root = "/" + registry.settings["root_name"]
    served = set()
    for entry in wsgi_app.registry.introspector.get_category("views"):
        view = entry["introspectable"]
        methods = view["request_methods"]
        if not methods:
            continue  # the 405 fallbacks
        methods = {methods} if isinstance(methods, str) else set(methods)
        methods.discard("HEAD")
        context, name = view["context"], view["name"]
        model = view.get("jsonapi_model")
        definitions = [d for d in registry.types.values() if model is None or d.model is model]
        for method in methods:
            if context is Root:
                served.add((f"/{name}", method))
            elif context is ApiRoot:
                served.add((f"{root}/{name}" if name else root, method))
            for d in definitions:
                base = f"{root}/{d.type}"
                if context is Collection:
                    served.add((f"{base}/{name}" if name else base, method))
                elif context is Item:
                    served.add((f"{base}/{{}}/{name}" if name else f"{base}/{{}}", method))
                elif context in (Related, ToOneLinkage, ToManyLinkage):
                    for rel in d.relationships:
                        if context is Related:
                            served.add((f"{base}/{{}}/{rel.name}", method))
                        elif (context is ToManyLinkage) == rel.many:
                            served.add((f"{base}/{{}}/relationships/{rel.name}", method))
    return served


def test_every_served_endpoint_is_documented_and_nothing_else(wsgi_app, document):
    documented = {(_template(path), method.upper()) for path, ops in document["paths"].items() for method in ops}
    served = _served(wsgi_app)
    assert served - documented == set()
    assert documented - served == set()


def _ids(db, blog, wsgi_app, auth_headers) -> dict:
    """A real id per type (visible to the admin), and one more token to delete."""
    registry = get_registry(wsgi_app.registry)
    ids = {}
    for definition in registry.types.values():
        entity = db.scalars(select(definition.model).order_by(getattr(definition.model, definition.id_attribute))).first()
        if entity is not None:
            ids[definition.type] = definition.identity(entity)
    ids["users"] = str(blog["bob"].id)  # not the admin: its removal must not end the session
    ids["articles"] = str(blog["draft"].id)
    auth_headers(blog["alice"])
    ids["tokens"] = str(db.scalars(select(Token.id).where(Token.user_id == blog["alice"].id)).first())
    return ids


def test_every_documented_operation_answers(api, db, blog, wsgi_app, auth_headers, admin_headers, document):
    """Each documented path and method reaches its view: never 404 or 405. Writes are sent an
    empty object (400 from the envelope check) so nothing changes; removals run last."""
    ids = _ids(db, blog, wsgi_app, auth_headers)
    calls = []
    for path, ops in document["paths"].items():
        type_name = path.split("/")[2] if path.startswith("/api/") else None
        url = path.replace("{id}", ids.get(type_name, "1"))
        for method in ops:
            calls.append((method.upper(), url, path))
    calls.sort(key=lambda call: (call[0] == "DELETE" and "/relationships/" not in call[1], call[1].startswith("/api/users")))
    for method, url, path in calls:
        kwargs = {"headers": admin_headers, "expect_errors": True}
        if method in ("POST", "PATCH", "DELETE") and ("/relationships/" in url or method != "DELETE"):
            kwargs["params"] = "{}" if ops_has_body(document, path, method) else ""
            kwargs["content_type"] = MEDIA_TYPE
        response = api._gen_request(method, url, **kwargs) if method != "GET" else api.get(url, **kwargs)
        assert response.status_int not in (404, 405), (method, url, response.status_int, response.body[:300])
        assert response.status_int < 500, (method, url, response.body[:300])


def test_security_requirements_match_what_anonymous_callers_get(api, db, blog, wsgi_app, auth_headers, document):
    """An operation documented as needing a token answers an anonymous caller 401 (or 404 where
    visibility hides the row first); one documented as public never answers 401 or 403."""
    ids = _ids(db, blog, wsgi_app, auth_headers)
    checked = {"public": 0, "token": 0}
    for path, ops in document["paths"].items():
        type_name = path.split("/")[2] if path.startswith("/api/") else None
        url = path.replace("{id}", ids.get(type_name, "1"))
        for method, operation in ops.items():
            if method == "delete" and "/relationships/" not in path:
                continue  # a public removal would remove; none is public, asserted below
            kwargs = {"expect_errors": True}
            if method != "get":
                kwargs.update(params="{}" if "requestBody" in operation else "", content_type=MEDIA_TYPE)
            response = api._gen_request(method.upper(), url, **kwargs) if method != "get" else api.get(url, **kwargs)
            if operation["security"] == [{"bearerAuth": []}]:
                assert response.status_int in (401, 404), (method, url, response.status_int)
                checked["token"] += 1
            else:
                assert response.status_int not in (401, 403), (method, url, response.status_int)
                checked["public"] += 1
    for path, ops in document["paths"].items():
        if "delete" in ops and "/relationships/" not in path:
            assert ops["delete"]["security"] == [{"bearerAuth": []}], path
    assert checked["public"] > 20 and checked["token"] > 20


def ops_has_body(document, path, method) -> bool:
    return "requestBody" in document["paths"][path][method.lower()]


def _examples(document):
    for path, ops in document["paths"].items():
        for method, operation in ops.items():
            example = operation.get("requestBody", {}).get("content", {}).get(MEDIA_TYPE, {}).get("example")
            if example is not None:
                yield path, method.upper(), operation["operationId"], example


def _real_linkage(example, ids):
    """The example with each identifier's id replaced by a real one of its type."""
    def fix(value):
        if isinstance(value, dict):
            if set(value) >= {"type", "id"} and value["type"] in ids and "attributes" not in value:
                return {**value, "id": ids[value["type"]]}
            return {key: fix(item) for key, item in value.items()}
        if isinstance(value, list):
            return [fix(item) for item in value]
        return value

    return fix(example)


#: Examples the service refuses even to an admin, and why.
REFUSED_TO_ADMINS = {
    "tokens.user.linkage.patch": 403,  # a token is never changed (the blog's token ACL)
}


def test_every_example_is_accepted(api, db, blog, wsgi_app, auth_headers, admin_headers, document, make_user):
    """Each generated example body (creates, updates, relationship changes), sent by an admin with
    real ids in place of the example's, is a 2xx."""
    ids = _ids(db, blog, wsgi_app, auth_headers)
    loner = make_user("loner@example.com", name="Loner")  # a user without a profile, for a new one
    ids_for_create = {**ids, "users": str(loner.id)}
    sent = set()
    for path, method, operation_id, example in _examples(document):
        type_name = path.split("/")[2]
        if operation_id.endswith(".update"):
            body = _real_linkage(example, {})
            body["data"]["id"] = ids[type_name]
        else:
            body = _real_linkage(example, ids_for_create if operation_id.endswith(".create") else ids)
        url = path.replace("{id}", ids[type_name])
        response = api._gen_request(method, url, params=json.dumps(body), headers=admin_headers,
                                    content_type=MEDIA_TYPE, expect_errors=True)
        expected = REFUSED_TO_ADMINS.get(operation_id)
        if expected:
            assert response.status_int == expected, (operation_id, response.status_int)
        else:
            assert 200 <= response.status_int < 300, (operation_id, body, response.status_int, response.body[:500])
        sent.add(operation_id)
    creates_and_updates = {f"{t}.{kind}" for t in ("users", "roles", "articles", "comments", "tags", "userProfiles")
                           for kind in ("create", "update")}
    assert creates_and_updates <= sent
    assert "users.articles.linkage.delete" not in sent  # would always be 422: no example offered
    assert len(sent) > 30


def test_create_examples_satisfy_the_documented_request_schema(document):
    import jsonschema

    for path, method, _operation_id, example in _examples(document):
        schema = document["paths"][path][method.lower()]["requestBody"]["content"][MEDIA_TYPE]["schema"]
        resolver_doc = {**schema, "components": document["components"]}
        jsonschema.Draft202012Validator(resolver_doc, format_checker=jsonschema.FormatChecker()).validate(example)


def test_query_parameters_of_a_list(document):
    parameters = document["components"]["parameters"]
    names = {parameters[p["$ref"].split("/")[-1]]["name"] for p in document["paths"]["/api/articles"]["get"]["parameters"]}
    assert {"include", "sort", "page[number]", "page[size]", "page[after]", "page[before]", "fields[articles]",
            "meta[articles]", "filter[title]", "filter[title][icontains]", "filter[author.name]", "filter[tags.name][in]"} <= names
    include = parameters["include.articles"]["schema"]["items"]["enum"]
    assert "author" in include and "comments.author" in include and "tags.articles.author" in include
    assert not any(path.count(".") >= 3 for path in include)  # jsonapi.max_include_depth = 3
    assert "totalCount" in parameters["meta.articles.collection"]["schema"]["items"]["enum"]
    assert "commentsCount" in parameters["meta.articles.collection"]["schema"]["items"]["enum"]
    assert "estimatedCount" in parameters["meta.articles.collection"]["schema"]["items"]["enum"]
    assert "estimatedCount" not in parameters["meta.users"]["schema"]["items"]["enum"]  # an included type's
    schemas = document["components"]["schemas"]
    for schema in ("ArticlesCollectionDocument", "TagsToManyLinkageDocument"):
        meta = schemas[schema]["properties"]["meta"]["properties"]
        assert meta["estimatedCount"]["type"] == "integer" and meta["estimatedCountExact"]["type"] == "boolean"
    sort = parameters["sort.articles"]["schema"]["items"]["enum"]
    assert "-createdAt" in sort and "author.name" in sort
    assert "filter.articles.createdAt.icontains" not in parameters  # text operators: text fields only
    assert parameters["filter.articles.createdAt.gte"]["schema"]["format"] == "date-time"
    # quantifiers and counts of to-many relationships; groups in the API's description
    assert {"filter[comments][any][body]", "filter[comments][all][author]", "filter[tags][none][name]",
            "filter[comments][count]", "filter[comments][count][gte]"} <= names
    assert not {"filter[author][any][name]", "filter[author][count]"} & names  # to-one: no quantifier
    assert parameters["filter.articles.comments.count.gte"]["schema"]["type"] == "integer"
    assert "filter[or][<n>]" in document["info"]["description"]
    # paged includes: to-many include paths only
    assert {"page[comments][size]", "page[comments][number]", "page[tags.articles][size]",
            "page[comments][after]", "page[tags.articles][before]"} <= names
    assert not {"page[author][size]", "page[comments.author][size]"} & names
    assert parameters["page.articles.comments.size"]["schema"]["maximum"] == 100


def test_request_bodies_follow_the_colander_rules(document):
    schemas = document["components"]["schemas"]
    users = schemas["UsersCreateRequest"]["properties"]["data"]["properties"]["attributes"]
    assert set(users["required"]) == {"name", "email", "password"}
    assert users["properties"]["email"]["format"] == "email"
    assert users["properties"]["password"]["minLength"] == 8
    assert users["properties"]["password"]["writeOnly"] is True
    assert users["additionalProperties"] is False
    assert "active" not in users["properties"]
    resource = schemas["UsersResource"]["properties"]["attributes"]["properties"]
    assert resource["active"]["readOnly"] is True and resource["createdAt"]["readOnly"] is True
    assert "password" not in resource
    articles = schemas["ArticlesCreateRequest"]["properties"]["data"]["properties"]["attributes"]["properties"]
    assert articles["status"]["enum"] == ["draft", "published", None] and articles["status"]["default"] == "draft"
    profiles = schemas["UserProfilesCreateRequest"]["properties"]["data"]
    assert profiles["properties"]["id"]["format"] == "uuid"  # client-generated ids
    assert profiles["properties"]["attributes"]["properties"]["website"]["format"] == "uri"
    assert profiles["properties"]["attributes"]["properties"]["birthday"]["format"] == "date"
    assert profiles["properties"]["relationships"]["required"] == ["user"]
    comments = schemas["CommentsCreateRequest"]["properties"]["data"]["properties"]["relationships"]
    assert comments["required"] == ["article"]  # author defaults to the caller
    assert "required" not in schemas["UsersUpdateRequest"]["properties"]["data"]["properties"]["attributes"]


def test_errors_and_security_per_operation(document):
    paths = document["paths"]
    create = paths["/api/articles"]["post"]["responses"]
    assert {"201", "400", "401", "403", "406", "409", "413", "415", "422", "500", "503"} <= set(create)
    assert "Location" in create["201"]["headers"]
    show = paths["/api/articles/{id}"]["get"]["responses"]
    assert "404" in show and "415" not in show
    assert create["422"] == {"$ref": "#/components/responses/ValidationError"}
    assert paths["/api/articles/{id}"]["delete"]["security"] == [{"bearerAuth": []}]
    assert {} in paths["/api/articles"]["get"]["security"]  # public, a token optional
    assert {} in paths["/api/users"]["post"]["security"]  # anyone signs up
    assert {} in paths["/api/tokens"]["post"]["security"]  # the replaced create: anyone asks for a token
    assert paths["/api/userProfiles"]["get"]["security"] == [{"bearerAuth": []}]
    assert paths["/api/users/{id}/activate"]["post"]["security"] == [{"bearerAuth": []}]
    assert paths["/api/users/{id}/activate"]["post"]["x-permission"] == "activate"


def test_docs_page_and_assets_are_served_by_the_service(api):
    page = api.get("/api/docs", headers={"Accept": "text/html"}, status=200)
    assert page.content_type == "text/html"
    html = page.text
    assert "https://" not in html and "http://" not in html  # nothing fetched from outside
    assets = re.findall(r'(?:href|src)="([^"]+)"', html)
    assert "/api/docs/swagger-ui-bundle.js" in assets and "/api/docs/swagger-ui.css" in assets
    for asset in assets:
        response = api.get(asset, status=200)
        assert len(response.body) > 100
    assert '"/api/openapi.json"' in html
    api.get("/api/docs/../../etc/passwd", status=404)
    api.get("/api/docs/index.html", status=404)
    response = api.post("/api/openapi.json", status=405)
    assert response.headers["Allow"] == "GET, HEAD"


def test_command_line_prints_the_document(tmp_path, capsys, database_url, wsgi_app):
    ini = tmp_path / "app.ini"
    ini.write_text(f"[app:main]\nuse = egg:jsonapi_blog\nsqlalchemy.url = {database_url}\n")
    os.environ.pop("DATABASE_URL", None)
    assert openapi.main([str(ini)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(json.dumps(openapi.get_document(wsgi_app.registry)))


# -- schemathesis ------------------------------------------------------------------------------

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_headers_conformance, response_schema_conformance]


def run_schemathesis(wsgi_app, headers, *, examples: int, budget: float, derandomize: bool) -> tuple[int, list[str]]:
    """Every operation of the live document, ``examples`` generated cases each (plus the
    document's own examples), within ``budget`` seconds; returns (cases, failures)."""
    schema = schemathesis.openapi.from_wsgi("/api/openapi.json", wsgi_app)
    deadline = time.monotonic() + budget
    failures: list[str] = []
    cases = 0
    operations = [result.ok() for result in schema.get_all_operations()]
    # Removals last (one may delete the caller's own token or account), reads first.
    operations.sort(key=lambda op: ({"GET": 0, "DELETE": 2}.get(op.method.upper(), 1), op.path))
    started = time.monotonic()
    for operation in operations:
        if time.monotonic() > deadline:
            break

        @hypothesis.settings(max_examples=examples, deadline=None, database=None, derandomize=derandomize,
                             suppress_health_check=list(hypothesis.HealthCheck),
                             phases=[hypothesis.Phase.explicit, hypothesis.Phase.generate])
        @hypothesis.given(case=operation.as_strategy())
        def check(case):
            nonlocal cases
            if time.monotonic() > deadline:
                return
            cases += 1
            case.call_and_validate(headers=headers, checks=CHECKS)

        try:
            check()
        except Exception as exc:  # noqa: BLE001 - collected and reported together
            failures.append(f"{operation.label}: {str(exc)[:1500]}")
    print(f"schemathesis: {cases} cases over {len(operations)} operations in {time.monotonic() - started:.1f} s")
    return cases, failures


@pytest.mark.skipif(FUZZ, reason="make fuzz runs the long form")
def test_schemathesis_short(wsgi_app, blog, admin_headers):
    # No time budget: derandomized, two examples per operation, so the number of cases is fixed
    # and a busy machine makes the run slower, never shorter.
    cases, failures = run_schemathesis(wsgi_app, admin_headers, examples=2, budget=math.inf, derandomize=True)
    assert not failures, "\n\n".join(failures)
    assert cases > 100


@pytest.mark.skipif(not FUZZ, reason="long form: make fuzz")
def test_schemathesis_fuzz(wsgi_app, blog, admin_headers):
    examples = int(os.environ.get("JSONAPI_FUZZ_EXAMPLES", "50"))
    budget = float(os.environ.get("JSONAPI_FUZZ_SECONDS", "600"))
    cases, failures = run_schemathesis(wsgi_app, admin_headers, examples=examples, budget=budget, derandomize=False)
    assert not failures, "\n\n".join(failures)
    assert cases > 0


def test_a_new_row_of_the_view_table_is_documented_from_its_doc(wsgi_app, monkeypatch):
    """The paths come from the view table: a row added to ``VIEWS`` appears for every type, as
    its ``Doc`` column describes it (or generically without one); no second list to keep."""
    from jsonapi_pyramid.openapi import document as builder
    from jsonapi_pyramid.security import Permission
    from jsonapi_pyramid.views import VIEWS, Doc, View

    row = View(Item, "PUT", lambda context, request: None, Permission.UPDATE,
               Doc("replace", "Replace one of {T}", "200 Document", "The replaced `{T}`.", (404, 409), "single",
                   "UpdateRequest"))
    monkeypatch.setattr(builder, "VIEWS", [*VIEWS, row])
    paths = openapi.build_document(wsgi_app.registry)["paths"]
    put = paths["/api/tags/{id}"]["put"]
    assert (put["summary"], put["operationId"]) == ("Replace one of tags", "tags.replace")
    assert put["requestBody"]["content"][MEDIA_TYPE]["schema"] == {"$ref": "#/components/schemas/TagsUpdateRequest"}
    assert put["responses"]["200"]["description"] == "The replaced `tags`." and {"404", "409"} <= set(put["responses"])
    assert [p.get("name") or p["$ref"] for p in put["parameters"]][:1] == ["#/components/parameters/id.tags"]
    assert paths["/api/articles/{id}"]["put"]["operationId"] == "articles.replace"
    monkeypatch.setattr(builder, "VIEWS", [*VIEWS, View(Item, "PUT", row.view, Permission.UPDATE)])
    assert openapi.build_document(wsgi_app.registry)["paths"]["/api/tags/{id}"]["put"]["operationId"] == "tags.item.put"
