"""The ceiling answers with the reference service's documents, byte for byte:
``selfcheck.py [DB_URL]`` (in-process, every scenario, both ceilings: ``ceiling`` and
``ceiling-core``; exit status 1 on a difference).

``compare(scenario, ours, ceiling)`` is what bench/run.py applies to the probe answers of every
scenario over HTTP before timing, and tests/functional/test_bench_ceiling.py runs ``check`` over a
small seeded database in ``make test``. What may differ, and why: the URL prefix (each app listens
on its own port; replaced by ``BASE``), and for a create (S5) the new article's id and its
``createdAt``/``updatedAt`` (every create makes another row at another instant). Headers are not
compared: the service sends ETag, Vary, X-Request-Id which the ceiling leaves out.

``differences(scenario, ours, peer)`` lists, without failing, where a peer's document (Django REST
framework JSON:API, ``drf``) differs from ours in structure: top-level members, the resources and
their order, attribute names and values, the members of each relationship, resource links, the
included resources, top-level links and meta. bench/run.py reports the list per scenario.
"""
from __future__ import annotations

import json
import pathlib
import shutil
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from scenarios import MEDIA, SCENARIOS, Unavailable, WsgiClient, build, first_difference, normalise  # noqa: E402


def compare(scenario: str, ours: tuple, ceiling: tuple) -> str | None:
    """None when (status, body, base) of the two answers match; else what differs."""
    (status_a, body_a, base_a), (status_b, body_b, base_b) = ours, ceiling
    if status_a != status_b:
        return f"status {status_a} / {status_b}"
    a, b = normalise(scenario, body_a, base_a), normalise(scenario, body_b, base_b)
    return None if a == b else first_difference(a, b)


OURS, PEERS = "ours'", "the peer's"


def _keys(document: dict, member: str) -> set:
    value = document.get(member)
    return set(value) if isinstance(value, dict) else set()


def _resources(document: dict) -> list:
    data = document.get("data")
    return data if isinstance(data, list) else [data] if isinstance(data, dict) else []


def _resource_differences(where: str, ours: list, peer: list) -> list[str]:
    """Attribute names and values, relationship members and resource links, over resources of the
    same (type, id) in both lists."""
    out: list[str] = []
    by_key = {(r.get("type"), r.get("id")): r for r in peer}
    values: dict = {}
    relationships: dict = {}
    links = set()
    for mine in ours:
        theirs = by_key.get((mine.get("type"), mine.get("id")))
        if theirs is None:
            continue
        a, b = mine.get("attributes", {}), theirs.get("attributes", {})
        for name in sorted(set(a) ^ set(b)):
            out.append(f"{where}: attribute {name!r} only in {OURS if name in a else PEERS}")
        for name in set(a) & set(b):
            if a[name] != b[name]:
                values.setdefault(name, (a[name], b[name]))
        ra, rb = mine.get("relationships", {}), theirs.get("relationships", {})
        for name in set(ra) | set(rb):
            shape = (tuple(sorted(ra.get(name, {}))), tuple(sorted(rb.get(name, {}))))
            if shape[0] != shape[1]:
                relationships.setdefault((mine.get("type"), name), shape)
        if ("links" in mine) != ("links" in theirs):
            links.add((mine.get("type"), "ours" if "links" in mine else "the peer's"))
    out = sorted(set(out))
    out += [f"{where}: attribute {name!r} differs in value, e.g. ours {a!r}, the peer's {b!r}"
            for name, (a, b) in sorted(values.items())]
    out += [f"{where}: relationship {kind}.{name} has members {list(a) or 'none'} in ours, {list(b) or 'none'} "
            "in the peer's" for (kind, name), (a, b) in sorted(relationships.items())]
    out += [f"{where}: {kind} resources carry links in {side} only" for kind, side in sorted(links, key=str)]
    return out


def differences(scenario: str, ours: bytes, peer: bytes) -> list[str]:
    """Where ``peer``'s document differs from ``ours`` (an empty list: the same in structure and
    values; URLs' host and port are not compared, nor a create's timestamps)."""
    a, b = json.loads(ours), json.loads(peer)
    if scenario == "S5":  # each create happens at another instant
        for document in (a, b):
            for resource in _resources(document):
                for name in ("createdAt", "updatedAt"):
                    if name in resource.get("attributes", {}):
                        resource["attributes"][name] = "X"
    out = []
    for member in sorted(set(a) ^ set(b)):
        out.append(f"top-level member {member!r} only in {OURS if member in a else PEERS} document")
    ra, rb = _resources(a), _resources(b)
    ids_a, ids_b = [(r.get("type"), r.get("id")) for r in ra], [(r.get("type"), r.get("id")) for r in rb]
    if ids_a != ids_b:
        same = set(ids_a) == set(ids_b)
        out.append(f"primary data: {len(ids_a)} resources in ours, {len(ids_b)} in the peer's"
                   + ("; the same resources in another order" if same else "; not the same resources")
                   + ("" if scenario != "S5" else " (S5: each create makes another row)"))
    out += _resource_differences("primary data", ra, rb)
    ia, ib = a.get("included", []), b.get("included", [])
    keys_a, keys_b = {(r["type"], r["id"]) for r in ia}, {(r["type"], r["id"]) for r in ib}
    if keys_a != keys_b:
        out.append(f"included: {len(keys_a)} resources in ours, {len(keys_b)} in the peer's, "
                   f"{len(keys_a & keys_b)} in both")
    elif [(r["type"], r["id"]) for r in ia] != [(r["type"], r["id"]) for r in ib] and ia:
        out.append("included: the same resources in another order")
    out += _resource_differences("included", ia, ib)
    for member in ("links", "meta"):
        ka, kb = _keys(a, member), _keys(b, member)
        if ka != kb:
            out.append(f"top-level {member}: {sorted(ka)} in ours, {sorted(kb)} in the peer's")
    return out


def check(ours_url: str, ceilings: dict[str, str], facts: dict, scenarios=None) -> dict:
    """Ceiling app (``ceiling``, ``ceiling-core``) -> scenario -> None (identical) or the
    difference, in-process; ``ceilings`` maps each ceiling app to its database URL. Every app is
    asked each scenario once, in one pass (ours creates one article in S5, as each ceiling does)."""
    from apps import build as build_app

    ours, engine = build_app("ours", ours_url)
    clients = {"ours": WsgiClient(ours)}
    built = []
    try:
        for app, url in ceilings.items():
            wsgi, _source = build_app(app, url)
            built.append(wsgi)
            clients[app] = WsgiClient(wsgi)
        return _check(clients, facts, scenarios)
    finally:
        engine.dispose()
        for wsgi in built:
            wsgi.registry["db"].close()


def _check(clients: dict, facts: dict, scenarios) -> dict:
    out: dict = {app: {} for app in clients if app != "ours"}
    for scenario in scenarios or SCENARIOS:
        answers = {}
        try:
            for app, client in clients.items():
                request = build(app, scenario, client, facts, {})
                status, _headers, body = client.request(request.method, request.path, request.body,
                                                         {"Accept": MEDIA, **request.headers})
                answers[app] = (status, body, client.base)
        except Unavailable as reason:
            for differences in out.values():
                differences[scenario] = f"unavailable: {reason}"
            continue
        for app, differences in out.items():
            differences[scenario] = compare(scenario, answers["ours"], answers[app])
    return out


def main() -> int:
    from run import OUT, add_ceiling_token, facts, seed

    if len(sys.argv) > 1:
        url = sys.argv[1]
    else:
        url = seed()
    ceilings = {"ceiling": url, "ceiling-core": url}
    if url.startswith("sqlite"):  # each its own copy: their creates (S5) stay apart
        path = pathlib.Path(url.split("///", 1)[1])
        for app in ceilings:
            copy = OUT / f"selfcheck-{app}.sqlite"
            shutil.copyfile(path, copy)
            ceilings[app] = f"sqlite:///{copy}"
    f = facts(url)
    for ceiling_url in set(ceilings.values()):
        add_ceiling_token(ceiling_url, f["user_id"])
    failures = 0
    for app, found in check(url, ceilings, f).items():
        for scenario, difference in found.items():
            print(f"{app} {scenario}: {'identical' if difference is None else difference}")
            failures += difference is not None
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
