"""Statements kept from one request to the next, and the caller's visibility criterion they are
built with: the load stage's memory.

A read's statement is built once per resource, query shape and visibility criterion object, and
reused with new bound values (ids, page bounds, the criterion's values): ``StatementCache``, one
per application on its registry (``contract.Registry.statements``), never at module level. The key
holds exactly the criteria the build read (``visibility_of`` notes each), so a ``visible=`` function
that returns the same criterion object for callers who see the same rows shares its statements.
"""
from __future__ import annotations

import contextlib
import itertools
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from pyramid.request import Request
from sqlalchemy.sql import Insert, Select, visitors
from sqlalchemy.sql.elements import ClauseElement

__all__ = ["StatementCache", "visibility_of"]


#: ``request.__dict__`` keys: the visibility criterion of each definition for this request, and
#: (while a statement is built for ``StatementCache``) the cache and the forms of the definitions the build read.
_VISIBILITY = "jsonapi_visibility"
_BUILDING = "jsonapi_statement_build"
#: ``StatementCache._forms``: a criterion shape whose values could not all be replaced
_UNSHARED = (None, ())


def _criterion(request: Request, definition: Any) -> Any:
    """``definition.visible(request)``, asked once per request."""
    memo = request.__dict__.get(_VISIBILITY)
    if memo is None:
        memo = request.__dict__[_VISIBILITY] = {}
    criterion = memo.get(definition, memo)
    if criterion is memo:
        criterion = memo[definition] = definition.visible(request)
    return criterion


def visibility_of(request: Request, definition: Any) -> Any:
    """``definition.visible(request)``, asked once per request (every statement of a request holds
    the same criterion object). While ``StatementCache`` builds a statement it is noted as read,
    and the statement gets the criterion's shared form (``StatementCache.shared``)."""
    criterion = _criterion(request, definition)
    building = request.__dict__.get(_BUILDING)
    if building is None:
        return criterion
    form = building[0].shared(criterion)
    _note_read(building, definition, form)
    return form[0]


def _note_read(building: Any, definition: Any, form: Any) -> None:
    """Note in a build's state that its statement holds ``form`` (a ``shared`` answer) of
    ``definition``'s criterion: the forms it holds are the ones whose values it needs."""
    building[1].setdefault(definition, {})[id(form[0])] = form


class _LRU(OrderedDict[Any, Any]):
    """A mapping of at most ``size`` items that drops the least recently used one when full."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def used(self, key: Any) -> Any:
        """The value of ``key`` (None when absent), now the most recently used."""
        value = self.get(key)
        if value is not None:
            with contextlib.suppress(KeyError):  # another thread dropped it meanwhile
                self.move_to_end(key)
        return value

    def keep(self, key: Any, value: Any) -> None:
        self[key] = value
        while len(self) > self.size:
            with contextlib.suppress(KeyError):  # another thread dropped it meanwhile
                self.popitem(last=False)


class StatementCache:
    """Statements kept from one request to the next (one cache per application), at most
    ``size``, the least recently used dropped first.

    SQLAlchemy computes the cache key of a new statement object on each execution (walking the
    whole statement: more than the rest of the execution of a small read); a statement object that
    is executed again reuses its key. So the statements of reads whose shape depends only on the
    resource, the query's structure and the visibility criteria are built once, with their values
    (ids, page bounds, filter values) as bound parameters.

    ``get(request, key, build, parameters)``: ``key`` is the structure of the read (resource, query
    shape); the visibility criteria in the key are *those ``build()`` read*: while it runs, every
    ``visibility_of`` is noted, and the cache keeps, per structural key, the definitions read. The
    next lookup asks the request for exactly those criteria, so the key cannot miss one the
    statement holds. A criterion enters a statement in its *shared form* (``shared``): one object
    per SQL shape (SQLAlchemy's cache key), its values as bound parameters named for that form,
    which ``get`` adds to ``parameters``. So a ``visible`` that builds its criterion per caller
    (``user_id == <the caller>``) shares one statement among callers, each with their own values
    bound; a criterion SQLAlchemy cannot key (or not a SQL expression) enters as it is, and its
    statements are kept for that object only."""

    def __init__(self, size: int = 512) -> None:
        self.size = size
        #: (structural key, definitions read, ids of the criteria) -> (those criteria, statement)
        self._entries = _LRU(size)
        #: structural key -> the definitions whose visibility its statement holds, in order
        self._reads = _LRU(size)
        #: criterion SQL shape -> (shared form, the names of its parameters)
        self._forms = _LRU(size)
        #: kept ``Select`` (or ``INSERT ... RETURNING``) -> {dialect: its compiled form, None when SQLAlchemy runs it}
        #: (``connection.execute`` runs it on the driver; gone with the statement)
        self.on_driver: Any = weakref.WeakKeyDictionary()
        #: id of a criterion -> (the criterion, its shared form, names, the criterion's bound values)
        self._seen = _LRU(size)
        self._names = itertools.count()
        self._lock = threading.Lock()
        #: lookups answered from the cache, and statements built
        self.hits = self.misses = 0

    def get(self, request: Request, key: tuple[Any, ...], build: Callable[[], Any], parameters: Any = None) -> Any:
        """The statement for ``key`` and the caller's visibility criteria, built by ``build()``
        the first time; the caller's values of those criteria are added to ``parameters`` (the
        statement's parameters: always give them, unless the statement is built into another
        one, whose ``get`` adds them)."""
        reads = self._reads.used(key)
        if reads is not None:
            forms = self._forms_of(request, reads)
            entry = self._entries.used((key, reads, tuple(id(form[0]) for form in forms)))
            if entry is not None and all(a is form[0] for a, form in zip(entry[0], forms)):
                self.hits += 1
                _bind(parameters, forms)
                return entry[1]
        self.misses += 1
        state = request.__dict__
        outer = state.get(_BUILDING)
        # (this cache, definition read -> {id of a form: the form} the statement holds, in the order read)
        building: tuple[Any, dict[Any, dict[int, Any]]] = (self, {})
        state[_BUILDING] = building
        try:
            statement = build()
        finally:
            state[_BUILDING] = outer
        reads = tuple(building[1])
        held = list(building[1].values())
        if outer is not None:  # a statement built around this one holds these forms too
            for definition, forms_held in zip(reads, held):
                for form in forms_held.values():
                    _note_read(outer, definition, form)
        forms = [form for forms_held in held for form in forms_held.values()]
        # Kept only when it holds one form per criterion: another thread may have given a shape a
        # new form while this one was built, and a lookup finds one form per definition read.
        if all(len(forms_held) == 1 for forms_held in held):
            if isinstance(statement, Select) or (isinstance(statement, Insert) and statement.exported_columns):
                self.on_driver.setdefault(statement, {})  # a read, or an INSERT returning its row
            self._reads.keep(key, reads)
            self._entries.keep((key, reads, tuple(id(form[0]) for form in forms)), (tuple(form[0] for form in forms), statement))
        _bind(parameters, forms)
        return statement

    def _forms_of(self, request: Request, reads: tuple[Any, ...]) -> list[tuple[Any, tuple[str, ...], tuple[Any, ...]]]:
        forms = [self.shared(_criterion(request, definition)) for definition in reads]
        # noted as read by a statement being built around this one (it holds this one's criteria)
        building = request.__dict__.get(_BUILDING)
        if building is not None:
            for definition, form in zip(reads, forms):
                _note_read(building, definition, form)
        return forms

    def shared(self, criterion: Any) -> tuple[Any, tuple[str, ...], tuple[Any, ...]]:
        """(the shared form of ``criterion``, the names of its parameters, ``criterion``'s values
        for them). The form is ``criterion`` with each bound value replaced by a required
        parameter (``jsonapi_visible_<n>_<i>``): a statement holding it cannot run without the
        caller's values. A criterion without values is its own form; one SQLAlchemy cannot key
        (or that is not a SQL expression) too, with nothing shared."""
        seen = self._seen.used(id(criterion))
        if seen is None or seen[0] is not criterion:
            seen = (criterion, *self._form_of(criterion))
            self._seen.keep(id(criterion), seen)
        # the values are read on each use: a bound value may be computed (``bindparam(callable_=...)``)
        return seen[1], seen[2], tuple(bind.effective_value for bind in seen[3])

    def _form_of(self, criterion: Any) -> tuple[Any, tuple[str, ...], Any]:
        """(shared form, names of its parameters, ``criterion``'s bound values in that order)."""
        # SQLAlchemy's own cache key: the criterion's structure, and its bound values in order
        cache_key = criterion._generate_cache_key() if isinstance(criterion, ClauseElement) else None
        if cache_key is None:
            return criterion, (), ()
        form = self._forms.used(cache_key.key)
        if form is None:
            with self._lock:  # one form per shape, whichever thread makes it first
                form = self._forms.used(cache_key.key)
                if form is None:
                    form = _shared_form(criterion, next(self._names)) if cache_key.bindparams else (criterion, ())
                    self._forms.keep(cache_key.key, form or _UNSHARED)
        if form is None or form is _UNSHARED:
            return criterion, (), ()
        return form[0], form[1], cache_key.bindparams

    def __len__(self) -> int:
        return len(self._entries)


def _shared_form(criterion: Any, number: int) -> tuple[Any, tuple[str, ...]] | None:
    """``criterion`` with each bound value replaced by a required parameter
    ``jsonapi_visible_<number>_<i>``, and their names in SQLAlchemy's cache key order (the order of
    ``criterion``'s own values: the form is a copy of the same structure); None when a value was
    not replaced (then nothing is shared)."""
    names: list[str] = []

    def replace(bind: Any) -> None:  # a copy of one bound value, made by the traversal for this form
        bind.key = f"jsonapi_visible_{number}_{len(names)}"
        names.append(bind.key)
        bind.unique, bind.value, bind.callable, bind.required = False, None, None, True

    # a cloning traversal whose visitor changes the copies (what ``ClauseElement.params`` does)
    form: Any = visitors.cloned_traverse(criterion, {}, {"bindparam": replace})
    ordered = [b.key for b in form._generate_cache_key().bindparams]
    return (form, tuple(ordered)) if sorted(ordered) == sorted(names) else None


def _bind(parameters: Any, forms: Any) -> None:
    """Add the caller's values of the criteria ``forms`` to ``parameters``."""
    if parameters is not None:
        for _form, names, values in forms:
            if names:
                parameters.update(zip(names, values))
