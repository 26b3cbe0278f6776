"""``jsonapi-pyramid-client INI --lang typescript --out DIR`` (CONTRACT section 12): the generated
``client.ts`` of the blog and of the catalogue compiles with ``tsc --strict`` (TypeScript 5 from
``clients/typescript/package-lock.json``), misspelt names and wrong attribute types do not, the
output is the same from run to run, and a Node script using the client's methods works against
the blog served in-process by waitress on an ephemeral 127.0.0.1 port.

TypeScript comes from the ``tsc`` fixture (tests/conftest.py): installed with ``npm ci`` into the
gitignored ``clients/typescript/node_modules`` only when that install is missing or older than the
lock file. Skipped (saying so) when node or npm are not installed.
"""
from __future__ import annotations

import hashlib
import json
import pathlib
import re
import shutil
import socketserver
import subprocess
import threading
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import pytest
from prodtools import make_account

from jsonapi_pyramid import __version__, clientcli
from jsonapi_pyramid.clientschema import schema_json, schema_of

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "clients" / "typescript"
#: what the contract asks of the client: TypeScript 5, Node 20 and browsers (fetch)
TSC_OPTIONS = ["--strict", "--target", "ES2022", "--lib", "ES2022,DOM"]


def _generate(tmp_path, use: str, out: pathlib.Path) -> pathlib.Path:
    ini = tmp_path / "app.ini"
    ini.write_text(f"[app:main]\nuse = {use}\nsqlalchemy.url = sqlite:///{tmp_path}/app.sqlite\n")
    assert clientcli.main([str(ini), "--lang", "typescript", "--out", str(out)]) == 0
    return out / "client.ts"


@pytest.fixture(scope="module")
def blog_client(tmp_path_factory) -> pathlib.Path:
    tmp = tmp_path_factory.mktemp("ts-blog")
    return _generate(tmp, "call:jsonapi_blog:main", tmp / "out")


def _compile(tsc, folder, *files, emit=False, bare=False):
    """tsc over ``files``: with the options of a Node 20 or browser build (``TSC_OPTIONS``), or
    ``bare``: ``tsc --strict --noEmit`` and nothing else, as the contract says."""
    options = [*TSC_OPTIONS, "--module", "commonjs", "--outDir", "js"] if emit else [*TSC_OPTIONS, "--noEmit"]
    if bare:
        options = ["--strict", "--noEmit"]
    return subprocess.run([str(tsc), *options, *files], cwd=folder, capture_output=True, text=True, timeout=300)


def test_the_client_compiles_strictly_and_says_where_it_comes_from(tsc, blog_client, wsgi_app):
    for bare in (True, False):  # TypeScript's default target and library, and a Node 20 / browser build's
        done = _compile(tsc, blog_client.parent, "client.ts", bare=bare)
        assert done.returncode == 0, done.stdout + done.stderr
    text = blog_client.read_text()
    digest = hashlib.sha256(schema_json(schema_of(wsgi_app.registry))).hexdigest()
    assert f"jsonapi_pyramid {__version__}" in text.splitlines()[1] and digest in text.splitlines()[2]
    assert not re.search(r"^import ", text, re.MULTILINE)  # self-contained: the platform's fetch only


def test_the_client_is_the_same_from_run_to_run(tmp_path, blog_client):
    assert _generate(tmp_path, "call:jsonapi_blog:main", tmp_path / "again").read_bytes() == blog_client.read_bytes()


#: (mistake, the line written) — each must fail to compile, while the correct usage beside them passes
MISTAKES = {
    "include": 'api.articles.list({ include: ["autor"] });',
    "attribute type": 'api.articles.create({ attributes: { title: 7 } });',
    "filter path": 'api.articles.list({ filter: { "author.nmae": "ali" } });',
    "sort key": 'api.articles.list({ sort: ["-createdOn"] });',
    "sort key through a relationship": 'api.articles.list({ sort: ["-coments.count"] });',
    "read-only attribute": 'api.articles.update("1", { attributes: { createdAt: "2026-01-01" } });',
    "type": 'api.artcles.list();',
    "custom operation": 'api.users.operations.item.activte("1");',
    "statistics function": 'api.articles.list({ stats: { title: ["sum"] } });',
    "atomic type": 'api.atomic([{ op: "add", data: { type: "tag", attributes: {} } }]);',
    "sideposted attribute": ('api.tags.create({ attributes: { name: "t" } }, '
                             '{ included: [{ type: "tags", lid: "a", attributes: { nam: "x" } }] });'),
}
CORRECT = """
const page = await api.articles.list({ include: ["author", "tags"], fields: { articles: ["title", "author"] },
  filter: { status: "published", "author.name": { icontains: "ali" } }, sort: ["-createdAt"], page: { size: 5 } });
const title: string = page.data[0].attributes.title;
const author: { type: "users"; id: string } | null | undefined = page.data[0].relationships.author.data;
const one = await api.articles.get("7", { include: ["comments.author"] });
const body: string | null = one.data.attributes.body;
const tag = await api.tags.create({ attributes: { name: "x" } });
await api.articles.update("7", { attributes: { title: "y" }, relationships: { tags: [{ type: "tags", id: tag.data.id }] } },
  { ifMatch: one.etag });
await api.articles.relationships.tags.add("7", [{ type: "tags", id: tag.data.id }]);
await api.articles.delete("7");
await api.articles.list({ sort: ["-comments.count", "author.name", "id"] });
await api.articles.create({ attributes: { title: "t" }, relationships: { tags: [{ type: "tags", lid: "a" }] } },
  { included: [{ type: "tags", lid: "a", attributes: { name: "new" } }] });
await api.articles.list({ stats: { total: ["count"], title: ["minimum", "maximum"] }, group: ["status"],
  meta: { articles: ["estimatedCount"] } });
const pages = api.articles.pages({ sort: ["title"], page: { size: 10 } });
const next: { data: { attributes: { title: string } }[] } | null = await pages.next();
await api.atomic([{ op: "add", data: { type: "tags", lid: "a", attributes: { name: "x" } } },
  { op: "remove", ref: { type: "tags", id: "1" } }]);
try { await api.users.get("1"); } catch (error) { if (error instanceof JsonApiError) { const s: number = error.status; } }
"""


def test_misspelt_names_and_wrong_types_do_not_compile(tsc, blog_client, tmp_path):
    shutil.copy(blog_client, tmp_path / "client.ts")
    header = 'import { Client, JsonApiError } from "./client";\nconst api = new Client({ baseUrl: "http://host:6543" });\n'
    files = {"correct.ts": f"{header}async function use(): Promise<void> {{{CORRECT}}}\nvoid use;\n"}
    for index, line in enumerate(MISTAKES.values()):
        files[f"mistake{index}.ts"] = f"{header}async function use(): Promise<void> {{\n  {line}\n}}\nvoid use;\n"
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    done = _compile(tsc, tmp_path, *files)
    failing = {match[1] for match in re.finditer(r"^(\w+\.ts)\(4,", done.stdout, re.MULTILINE)}
    assert not [line for line in done.stdout.splitlines() if line.startswith(("correct.ts", "client.ts"))], done.stdout
    assert failing == {f"mistake{index}.ts" for index in range(len(MISTAKES))}, done.stdout


class _Server(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass


@pytest.fixture
def served_blog(wsgi_app):
    """The in-process application on an ephemeral port, stopped cleanly: waitress's server closed
    from another thread while its loop polls the socket raised EBADF in that thread now and then
    (an unhandled thread exception, an error under ``filterwarnings = error``); the standard
    library's server stops its loop before the socket is closed."""
    server = make_server("127.0.0.1", 0, wsgi_app, server_class=_Server, handler_class=_QuietHandler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


def test_a_node_script_uses_the_client_against_the_blog(tsc, blog_client, tmp_path, served_blog, db):
    shutil.copy(blog_client, tmp_path / "client.ts")
    shutil.copy(PACKAGE / "blog-smoke.ts", tmp_path / "blog-smoke.ts")
    done = _compile(tsc, tmp_path, "client.ts", "blog-smoke.ts", emit=True)
    assert done.returncode == 0, done.stdout + done.stderr
    _admin, headers = make_account(db, "typed@example.com", admin=True)
    inactive, _headers = make_account(db, "waiting@example.com", active=False)
    token = headers["Authorization"].removeprefix("Bearer ")
    run = subprocess.run(["node", "js/blog-smoke.js", served_blog, token, "one", str(inactive.id)], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(run.stdout.strip().splitlines()[-1])
    article = report["article"]
    assert report["createdTitle"] == "Typed one"
    assert report["listed"] == [{"id": article, "title": "Typed one", "author": "users"}]
    assert report["includedTypes"] == ["tags", "users"]
    assert report["etag"] and report["notModified"] is True and report["withComments"] is True
    assert report["updatedTitle"] == "Retitled one" and report["updatedEtag"] is True
    assert report["stale"] == 412  # If-Match with the tag from before the update
    assert report["afterAdd"] == sorted([report["tag"], report["second"]]) and report["afterRemove"] == [report["second"]]
    assert report["unauthorized"] == {"status": 401, "errors": 1}
    assert report["missing"] == 404
    assert report["activated"] == {"status": 200, "active": True, "wasActive": False}  # a custom operation
    counted = report["counted"]  # stats and counts; cursor pages, one article each, as many as the total
    assert counted["meta"] == {"totalCount": 1, "stats": {"total": {"count": 1}, "title": {"minimum": "Typed one"}}}
    assert counted["paged"] == counted["all"] >= 1
    assert report["atomicTag"] == "ts3-one"  # an atomic request
    assert report["sideposted"] == ["tags"]  # the new tag, with its lid, in the answer's included
    from jsonapi_blog.models import Article, Tag, User

    db.expire_all()
    assert db.get(Article, int(article)) is None  # deleted through the client
    assert db.get(User, inactive.id).active is True
    assert sorted(tag.name for tag in db.query(Tag)) == ["ts-one", "ts2-one", "ts3-one", "ts4-one"]


def test_the_catalogues_client_compiles_strictly(tsc, tmp_path):
    """Polymorphic families, UUID and text keys, computed and JSON attributes."""
    client = _generate(tmp_path, "call:catalog:main", tmp_path / "out")
    done = _compile(tsc, client.parent, "client.ts", bare=True)
    assert done.returncode == 0, done.stdout + done.stderr
    text = client.read_text()
    assert '"borrower": ToOne<"members" | "staff" | "students">;' in text


@pytest.mark.parametrize("application", ["jsonapi_blog", "catalog"])
def test_include_sort_and_filter_names_are_the_openapi_documents(application):
    """What the client's literal types allow is what the OpenAPI document's ``include``, ``sort``
    and ``filter[<path>]`` parameters list (a polymorphic target: the relationships its whole
    family has), for every type of the blog and of the catalogue."""
    import importlib

    from jsonapi_pyramid.openapi import get_document
    from jsonapi_pyramid.tsclient import typescript_client

    app = importlib.import_module(application).main({}, **{"sqlalchemy.url": "sqlite://"})
    parameters = get_document(app.registry)["components"]["parameters"]
    schema = schema_of(app.registry)
    text = typescript_client(schema, version=__version__)
    for type_name in schema["types"]:
        camel = re.sub(r"^.", lambda match: match[0].upper(), type_name)
        for kind in ("include", "sort"):
            union = re.search(rf"^export type {camel}{kind.capitalize()} = (.*);$", text, re.MULTILINE)[1]
            parameter = parameters.get(f"{kind}.{type_name}")
            assert set(re.findall(r'"([^"]+)"', union)) == set(parameter["schema"]["items"]["enum"] if parameter else ()), (
                type_name, kind)
        block = re.search(rf"^export interface {camel}Filter {{\n(.*?)\n}}", text, re.MULTILINE | re.DOTALL)[1]
        paths = set(re.findall(r'^  "([^"]+)"\?', block, re.MULTILINE))
        offered = {parameter["name"][len("filter["):-1] for key, parameter in parameters.items()
                   if key.startswith(f"filter.{type_name}.") and re.fullmatch(r"filter\[[^\]]+\]", parameter["name"])}
        assert paths == offered, type_name
    app.registry["db.engine"].dispose()
