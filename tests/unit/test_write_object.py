"""``writes.Write`` is made whole and never changed (issue 34: no object a request touches is
completed after construction): each operation hands its checks a copy that names it."""
from __future__ import annotations

import dataclasses

import pytest

from jsonapi_pyramid.writes import Write


def test_a_write_cannot_be_changed_once_made():
    write = Write(context=None, data={"type": "tags"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        write.kind = "create"  # type: ignore[misc]
    named = dataclasses.replace(write, kind="create")
    assert (named.kind, named.data, write.kind) == ("create", {"type": "tags"}, "")
