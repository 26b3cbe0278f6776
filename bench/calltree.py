"""The inclusive call tree of one request, in-process: ``calltree.py SCENARIO [--depth N] [--min N]
[--app ours|ceiling]``.

Sends the scenario's request (bench/scenarios.py) through the whole WSGI application 5 times to
warm up, then once under ``sys.setprofile`` and prints, for each function reached, the number of
Python and C calls made in its subtree (itself included), largest first, indented by depth; a
subtree under ``--min`` calls (default 10) is left out. Where ``calls.py`` says how many calls a
request makes and which functions take the most own time, this says which step of the request's
path (tweens, traversal, the view, loading, the document, rendering, the finished callbacks) they
belong to; its last line sums them by stage (``stages``: the nearest library function above each
call decides). Without a database URL in ``BENCH_CALLS_URL`` it uses ``calls.py``'s seeded SQLite file.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import sys
from typing import Any

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from calls import Caller, database, ensure_token  # noqa: E402
from scenarios import WsgiClient, build  # noqa: E402


class Node:
    __slots__ = ("children", "count", "name")

    def __init__(self, name: str) -> None:
        self.name, self.children, self.count = name, {}, 0


def _name(frame: Any, event: str, arg: Any) -> str:
    if event == "call":
        code = frame.f_code
        filename = code.co_filename.split("site-packages/")[-1].replace(str(HERE.parent) + "/", "")
        return f"{filename}:{code.co_firstlineno}:{code.co_name}"
    return f"C:{getattr(arg, '__qualname__', arg)}"


def record(caller: Any) -> Node:
    """The call tree of one ``caller()``."""
    root = Node("request")
    stack = [root]

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event in ("call", "c_call"):
            key = _name(frame, event, arg)
            node = stack[-1].children.get(key)
            if node is None:
                node = stack[-1].children[key] = Node(key)
            node.count += 1
            stack.append(node)
        elif event in ("return", "c_return", "c_exception") and len(stack) > 1:
            stack.pop()

    sys.setprofile(profile)
    try:
        caller()
    finally:
        sys.setprofile(None)
    return root


def totals(node: Node, into: dict[int, int]) -> int:
    total = node.count + sum(totals(child, into) for child in node.children.values())
    into[id(node)] = total
    return total


#: The request's path, stage by stage: a library module (or package) -> its stage. A call belongs to
#: the stage of the nearest library function above it (SQLAlchemy's work for ``loading`` is load);
#: calls with none above them are the server's and Pyramid's (the router, the tween chain, webob).
STAGES = {
    "tweens (CORS, negotiation, logs, metrics, ...)": ("cors", "negotiation", "logging", "observability", "replicas",
                                                       "deadlines", "idempotency", "health"),
    "traversal and security": ("traversal", "security", "acl", "contract"),
    "parse": ("query", "filtering", "filter_syntax", "filter_terms", "sorting", "identifiers", "body", "validation",
              "stats_rules", "hints"),
    "pagination (cursors, paged includes)": ("pagination", "include_pages"),
    "load (SQL)": ("loading", "includes", "stored", "tag_linkage", "connection", "schema", "stats", "idlists",
                   "relationships"),
    "build": ("document", "records", "urls", "transformer", "jsontypes"),
    "render and ETag": ("renderer", "conditional"),
    "session and transaction": ("db", "transactions", "tm_join", "locking"),
    "write (changes, flush)": ("writes", "changes", "plain_writes", "operations", "atomic", "preconditions"),
    "views": ("views",),
}
_STAGE_OF = {module: stage for stage, modules in STAGES.items() for module in modules}
SERVER = "server and Pyramid (router, tween chain, webob)"


def _stage(name: str) -> str | None:
    """The stage of a recorded function (``file:line:name``), when it is the library's or the blog's."""
    filename = name.split(":", 1)[0]
    if filename.startswith("jsonapi_blog/"):
        return "the application (jsonapi_blog)"
    if not filename.startswith("jsonapi_pyramid/"):
        return None
    module = filename[len("jsonapi_pyramid/"):].removesuffix(".py").split("/")[0]
    return _STAGE_OF.get(module, "other library code")


def stages(root: Node) -> dict[str, int]:
    """Calls per stage (``STAGES``) of one recorded request, largest first."""
    counts: dict[str, int] = {}

    def walk(node: Node, stage: str) -> None:
        for child in node.children.values():
            own = _stage(child.name) or stage
            counts[own] = counts.get(own, 0) + child.count
            walk(child, own)

    walk(root, SERVER)
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def show(node: Node, sums: dict[int, int], depth: int, smallest: int, indent: str = "") -> None:
    for child in sorted(node.children.values(), key=lambda c: -sums[id(c)]):
        if sums[id(child)] < smallest:
            continue
        print(f"{indent}{sums[id(child)]:6d} {child.name}")
        if depth > 0:
            show(child, sums, depth - 1, smallest, indent + "  ")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("scenario")
    parser.add_argument("--depth", type=int, default=40)
    parser.add_argument("--min", type=int, default=10)
    parser.add_argument("--app", default="ours")
    args = parser.parse_args()
    from apps import build as build_app
    from run import facts

    url = os.environ.get("BENCH_CALLS_URL") or database()
    known = facts(url)
    ensure_token(url, known["user_id"])
    wsgi, _source = build_app(args.app, url)
    caller = Caller(wsgi, build(args.app, args.scenario, WsgiClient(wsgi), known, {}))
    for _ in range(5):
        caller()
    tree = record(caller)
    sums: dict[int, int] = {}
    print(f"{args.scenario} {args.app}: {totals(tree, sums)} calls")
    show(tree, sums, args.depth, args.min)
    print("by stage:", ", ".join(f"{stage} {n}" for stage, n in stages(tree).items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
