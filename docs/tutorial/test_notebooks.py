"""What the tutorial added, through HTTP: notebooks and their notes, the owner of a note, the
owner's rule and the pin operation."""
from __future__ import annotations

import json
from typing import Any

MEDIA_TYPE = "application/vnd.api+json"


def send(app: Any, method: str, url: str, document: dict[str, Any], headers: dict[str, str], status: int) -> Any:
    headers = {**headers, "Content-Type": MEDIA_TYPE}
    return app.request(url, method=method, body=json.dumps(document).encode(), headers=headers, status=status)


def test_a_note_in_a_notebook(app, editor):
    notebook = send(app, "POST", "/api/notebooks", {"data": {"type": "notebooks", "attributes": {"name": "Home"}}},
                    editor, 201).json["data"]
    linkage = {"data": {"type": "notebooks", "id": notebook["id"]}}
    send(app, "POST", "/api/notes", {"data": {"type": "notes", "attributes": {"title": "Groceries"},
                                              "relationships": {"notebook": linkage}}}, editor, 201)
    document = app.get(f"/api/notebooks/{notebook['id']}?include=notes&meta[notebooks]=notesCount").json
    assert [n["attributes"]["title"] for n in document["included"]] == ["Groceries"]
    assert document["data"]["meta"] == {"notesCount": 1}
    assert app.get("/api/notes?filter[notebook]=" + notebook["id"]).json["data"][0]["attributes"]["title"] == "Groceries"


def test_the_caller_who_creates_a_note_owns_it_and_only_the_owner_changes_it(app, editor, other_editor):
    created = send(app, "POST", "/api/notes", {"data": {"type": "notes", "attributes": {"title": "Mine"}}}, editor, 201)
    assert created.json["data"]["attributes"]["owner"] == "editor"
    url = created.headers["Location"]
    change = {"data": {"type": "notes", "id": created.json["data"]["id"], "attributes": {"title": "Theirs"}}}
    send(app, "PATCH", url, change, other_editor, 403)
    assert send(app, "PATCH", url, change, editor, 200).json["data"]["attributes"]["owner"] == "editor"
    # the owner is the server's to set: a client that sends it gets a 422 pointing at it
    sent = {"data": {"type": "notes", "attributes": {"title": "x", "owner": "someone"}}}
    error = send(app, "POST", "/api/notes", sent, editor, 422).json["errors"][0]
    assert error["source"]["pointer"] == "/data/attributes/owner"


def test_the_owner_pins_a_note(app, editor, other_editor):
    created = send(app, "POST", "/api/notes", {"data": {"type": "notes", "attributes": {"title": "Pin me"}}}, editor, 201)
    url = created.headers["Location"] + "/pin"
    app.post(url, headers=other_editor, status=403)
    pinned = app.post(url, headers=editor, status=200).json["data"]
    assert pinned["attributes"]["pinned"] is True
    assert app.get(url, status=405).headers["Allow"] == "POST"
