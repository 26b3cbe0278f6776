"""Cursor pagination: JSON:API's cursor pagination profile
(http://jsonapi.org/profiles/ethanresnick/cursor-pagination/). The public names, where
applications import them; each lives in the module of its stage:

* ``cursors``: the profile as a request gives it: ``Accept`` naming it, the sorts a cursor can
  carry, the profile's errors (``ERROR_TYPES``), the signed cursors (``CursorCodec``);
* ``keyset``: the order keys (``OrderKey``), the keyset SQL (``keyset_criterion``) and the run of
  one page (``load_cursor_page``, whose ``CursorPage`` goes to the build stage);
* ``page_links``: a page's links and the profile's members of the document.
"""
from __future__ import annotations

from .load.keyset import CursorPage, OrderKey, keyset_criterion, load_cursor_page
from .parse.cursors import ERROR_TYPES, PROFILE, CursorCodec, check_cursor_sort, collection_scope, max_size_error, profile_requested

__all__ = ["ERROR_TYPES", "PROFILE", "CursorCodec", "CursorPage", "OrderKey", "check_cursor_sort", "collection_scope",
           "keyset_criterion", "load_cursor_page", "max_size_error", "profile_requested"]
