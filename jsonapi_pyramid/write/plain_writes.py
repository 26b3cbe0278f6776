"""Writes without the ORM's unit of work: a create or an attribute update of one row whose values
are known columns of one table runs as one Core ``INSERT`` or ``UPDATE`` on the request's
connection, in its transaction, instead of ``session.add`` and a flush (about a third of a create's
Python calls go to the unit of work deciding what a single row already says).

Whether a type may be written this way is decided once, when the configuration commits
(``plain_rules.resolve_plain_writes``, the last of ``startup``'s passes, kept on the definition
as ``plain_writes``); a write takes this path only when, besides, everything it sends and everything
listening allows it (``PlainWrites.insert``, ``PlainWrites.update``: None means "take the ORM's
path", which stays the way for everything else). The rule, so that the database, the session and
every hook end as the ORM would leave them:

* the type: a mapper of one ``Table`` (no inheritance, no polymorphic family, no
  ``version_id_col``), no ``@validates``, the class's constructor SQLAlchemy's default (the ORM's
  path makes ``Model()``: an ``__init__`` of the application's could set values), no ``apply=``
  hook of the definition (it is given an entity);
* what the write sends: attributes that are plain column attributes of that table, and (a create
  only) to-one relationships whose foreign key is on that table (many-to-one, no ``secondary``, no
  ``post_update``): the key is copied from the target read by validation, as the ORM's flush
  copies it. A to-many, a one-to-one held by the other side, or any relationship in an update goes
  the ORM's way;
* a to-one named by its key (``ToOneKey``: ``keyed``, the module's next section) is not read
  before the create: the ``INSERT`` selects its key from the target's table through the target's
  visibility (``INSERT ... SELECT ... RETURNING``), so the create inserts a row only when every
  such target exists and the caller may see it, in the one statement; when it inserts none,
  ``insert`` answers None and the write resolves the targets as validation would have
  (``validation.resolve_keyed``: the same errors, with their pointers);
* nobody listening for what only the ORM's path does: no mapper ``before_insert``/``after_insert``
  (``before_update``/``after_update``), no instance ``init`` or ``refresh_flush`` listener but
  SQLAlchemy's own, no attribute ``set`` listener on a column written (nor one but SQLAlchemy's on
  a relationship written), and on the session no ``before_flush``, ``after_flush_postexec``,
  ``transient_to_pending``, ``pending_to_persistent``, ``detached_to_persistent`` listener and no
  ``after_flush`` listener but the library's own (``tm_join.FLUSH_LISTENERS``), which are called
  after the statement as a flush would (the transaction is marked changed, so it commits).

Column defaults (``default=``, callables included, ``server_default``, ``onupdate``) are the
statement's, as in a flush; a ``None`` sent for a column with a default on create is left out, as
the ORM leaves it out (``JSON`` and other types that store ``None`` as a value aside). An update
writes only the columns whose value changes (compared by the column type, as the ORM compares),
and none when nothing changes. The entity returned is in the session, persistent, its column
attributes the values written (what the database computed is loaded on first use): the same
``writes.create`` contract. The answer is read back by ``stored.load_stored`` either way.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import bindparam, inspect, select, true
from sqlalchemy.orm import make_transient_to_detached
from sqlalchemy.orm.attributes import set_committed_value
from sqlalchemy.orm.exc import StaleDataError

from ..connection import execute, session_events, session_or_none
from ..load.idlists import dialect_of
from ..tm_join import FLUSH_LISTENERS

__all__ = ["PlainWrites", "ToOne", "ToOneKey"]

#: SQLAlchemy's own listeners (mapper configuration on ``init``, cascades and backrefs on
#: relationship attributes): they do what they do on either path.
_SQLALCHEMY_LISTENERS = ("sqlalchemy.orm.mapper", "sqlalchemy.orm.unitofwork", "sqlalchemy.orm.attributes")
#: Session events the ORM's path fires and this one does not (or the other way round), on a
#: create and on an update (``after_flush``: only the library's own listeners, called here).
_UPDATE_EVENTS = ("before_flush", "after_flush_postexec")
_INSERT_EVENTS = (*_UPDATE_EVENTS, "transient_to_pending", "pending_to_persistent", "detached_to_persistent")
#: the bound parameter of an update's row; the prefix of a keyed target's (``_insert_returning``)
_ID = "jsonapi_plain_id"
_TARGET = "jsonapi_target_"
#: dialects that run an ``INSERT ... RETURNING`` in a ``WITH`` (``insert``'s ``read``)
_DML_IN_WITH = frozenset(("postgresql",))


@dataclass(frozen=True)
class ToOne:
    """A many-to-one written as its foreign key: the local column's key, the target's attribute."""

    prop: Any
    pairs: tuple[tuple[str, str], ...]  # (local column key, target attribute key)
    reverse: tuple[str, ...]  # the target's relationships back to the type (expired when loaded)
    reverse_attributes: tuple[Any, ...]  # their class attributes (a backref fires their events)

    def quiet(self) -> bool:
        """No listener on the relationship, nor on the way back, but SQLAlchemy's own."""
        if not _quiet_listeners(self.prop.class_attribute.dispatch.set):
            return False
        for attribute in self.reverse_attributes:
            events = attribute.dispatch
            if not (_quiet_listeners(events.append) and _quiet_listeners(events.set) and _quiet_listeners(events.remove)):
                return False
        return True


@dataclass(frozen=True)
class ToOneKey:
    """The target of a to-one named by its key (``key``, the target's id value), not read yet: the
    create's ``INSERT`` checks that it exists and is visible (``PlainWrites.keyed``); ``linkage``
    is what validation read (``validation.linkage.Linkage``), for resolving it the usual way."""

    linkage: Any
    key: Any


class PlainWrites:
    """What a type's plain writes need, built once (``plain_rules.resolve_plain_writes``)."""

    def __init__(self, mapper: Any, columns: dict[str, Any], to_ones: dict[str, ToOne]) -> None:
        self.mapper = mapper
        self.table = mapper.local_table
        #: entity attribute -> its column
        self.columns = columns
        #: column key -> entity attribute
        self.keys = {column.key: key for key, column in columns.items()}
        #: column key -> the class's instrumented attribute (its ``set`` listeners)
        self.class_attributes = {column.key: getattr(mapper.class_, key) for key, column in columns.items()}
        #: relationship attribute -> ``ToOne``
        self.to_ones = to_ones
        self.id_column = mapper.primary_key[0]
        self.insert_statement = self.table.insert()
        self.update_statement = self.table.update().where(self.id_column == bindparam(_ID))
        #: columns whose ``None`` is a value (``TypeEngine.should_evaluate_none``), sent as such
        self.none_is_value = frozenset(c.key for c in self.table.columns if c.type.should_evaluate_none)
        #: column keys a create leaves NULL when it gives them no value (no default of any kind)
        self.null_unless_set = frozenset(c.key for c in self.table.columns if c.default is None and c.server_default is None)
        #: column keys the database or an ``onupdate`` sets on an update (expired on the entity)
        self.on_update = tuple(c.key for c in self.table.columns if c.onupdate is not None or c.server_onupdate is not None)
        #: relationship names whose target a create may name by its key (``keyed``)
        self.keyed = frozenset[str]()
        #: (column key, its Python-side default as a function of nothing) for the defaults a
        #: statement's execution context would compute (``plain_rules``: scalars and callables that
        #: take no context); bound as values, they leave the statement nothing to compute, so that a
        #: kept one may run on the driver (``connection``)
        self.defaults: tuple[tuple[str, Any], ...] = ()
        #: a Python-side default takes SQLAlchemy's execution context: its ``get_current_parameters``
        #: knows no ``INSERT`` in a ``WITH`` (``insert``'s ``read`` is not done)
        self.context_defaults = False
        #: the keys of an item's record (``item_columns``) and its maker, when each is a column this
        #: type's ``INSERT`` returns (the record of a new row is then made from what it returned)
        self.record_keys: tuple[str, ...] | None = None
        self.record: Any = None

    # -- create --------------------------------------------------------------------------------

    def insert(self, request: Any, definition: Any, changes: Any, statements: Any, read: Any = None,
               attach: bool = True) -> Any:
        """Insert the row of ``changes`` (``validation.Changes``): ``(entity, what read read)``, or
        None when this write must take the ORM's path (nothing was done) or a to-one target named
        by its key (``ToOneKey``) is missing or hidden (nothing was inserted). ``statements``: the
        application's ``load.statements.StatementCache`` (the statement that selects such keys
        holds the targets' visibility). ``read`` (``load.stored.InsertedReads``): what to read with
        the new row, second in the answer (else None): on a database that runs an ``INSERT`` in a
        ``WITH`` (PostgreSQL) the values of ``read.columns(new)`` (``new``: the ``INSERT ...
        RETURNING``, its columns by key), elsewhere, where the ``INSERT`` returns its row,
        ``read.from_row(row, the relationships set)``; either may be None. ``attach=False``: the
        entity is left out of the session (transient, its columns' values set: for a caller that
        needs only them, the create view's answer)."""
        session = session_or_none(request)  # an HTTP write has none unless something asked for it
        values = self._values(definition, changes.attributes)
        if values is None or not self._quiet(session_events(request, session), "insert"):
            return None
        keyed = []
        for relationship, target in changes.relationships:
            to_one = self.to_ones.get(relationship.prop.key)
            if to_one is None or not to_one.quiet():
                return None
            if isinstance(target, ToOneKey):
                keyed.append((relationship, to_one, target))
                continue
            if target is not None and (session is None or not inspect(target).persistent):
                return None  # a target instance (validation loaded it) is in the session
            for local, remote in to_one.pairs:
                values[local] = None if target is None else getattr(target, remote)
        if changes.id is not None:
            values[self.id_column.key] = changes.id
        for key in [key for key, value in values.items() if value is None and key not in self.none_is_value]:
            del values[key]  # the column's default, as the ORM's flush leaves None out
        held = {local for _relationship, to_one, _key in keyed for local, _remote in to_one.pairs}
        for key, default in self.defaults:  # computed as the statement's execution would, before it
            if key not in values and key not in held:
                values[key] = default()
        dialect, sent = dialect_of(request), frozenset(relationship.name for relationship, _target in changes.relationships)
        in_with = (read is not None and not self.context_defaults and dialect.name in _DML_IN_WITH
                   and not read.known(sent, self.null_unless_set.difference(values, held)))
        from_row = read is not None and not in_with and dialect.insert_returning
        extra = None
        if keyed or in_with or from_row:
            returned = self._insert_returning(request, session, values, keyed, statements, read if in_with else None)
            if returned is None:
                return None
            written, extra = returned
            if from_row:
                extra = read.from_row(written, sent)
        else:
            result = _run(request, session, self.insert_statement, values)
            written = result.last_inserted_params()
            written[self.id_column.key] = result.inserted_primary_key[0]
        return self._inserted(request, changes, written, attach), extra

    def _inserted(self, request: Any, changes: Any, written: dict[str, Any], attach: bool) -> Any:
        """After the ``INSERT``: the entity of the row ``written`` (in the session when ``attach``),
        the session's flush listeners called and the targets' loaded collections expired, as a
        flush would leave them, when the request has a session."""
        session = session_or_none(request)  # in scripts, the connection's (made with it)
        if session is None:  # nothing to mark nor expire: the write's connection commits (transactions.py)
            return self._persistent(request.dbsession if attach else None, written)
        self._flushed(session)
        for relationship, target in changes.relationships:
            reverse = self.to_ones[relationship.prop.key].reverse
            if isinstance(target, ToOneKey):
                target = _in_session(session, relationship.target_definition, target.key)
            if target is not None:
                _expire_loaded(session, target, reverse)
        return self._persistent(session if attach else None, written)

    def keyed_names(self, request: Any) -> frozenset[str]:
        """The to-ones (``keyed``) a create may send by key, on a database whose ``INSERT`` returns
        rows (``RETURNING``: PostgreSQL, SQLite 3.35 and later, MariaDB 10.5 and later)."""
        return self.keyed if self.keyed and dialect_of(request).insert_returning else frozenset()

    def _insert_returning(self, request: Any, session: Any, values: dict[str, Any], keyed: list[Any], statements: Any,
                          read: Any) -> tuple[dict[str, Any], tuple[Any, ...] | None] | None:
        """``INSERT ... RETURNING *``: (the row written, column key -> value; the values of
        ``read``'s columns or None), or None when it inserted nothing (a target missing or hidden).
        With keyed to-ones, ``INSERT INTO t (columns..., keys...) SELECT :values..., target
        keys... FROM targets WHERE each target's id and visibility``; with ``read``, in a ``WITH``
        whose ``SELECT`` reads its columns. Kept per columns, relationships and ``read``
        (``statements``: with the criteria of the targets' visibility and of what ``read`` reads)."""
        names = tuple(sorted(values))
        if any(local in values for _relationship, to_one, _key in keyed for local, _remote in to_one.pairs):
            return None  # a key sent as an attribute too: the ORM's way decides
        table = self.table

        def build() -> Any:
            selected: list[Any] = [bindparam(name, type_=table.c[name].type) for name in names]
            if not keyed:
                return _reading(table.insert().values(dict(zip(names, selected, strict=True))), read)
            columns, criteria, joined = list(names), [], cast("Any", None)
            for index, (relationship, to_one, _key) in enumerate(keyed):
                target = relationship.target_definition
                source = inspect(target.model).local_table  # one row each: joined on TRUE, not a product by mistake
                joined = source if joined is None else joined.join(source, true())
                for local, remote in to_one.pairs:
                    columns.append(local)
                    selected.append(getattr(target.model, remote))
                criteria.append(target.id_key.equals(target.model, f"{_TARGET}{index}"))
                criterion = target.visibility(request)
                if criterion is not None:
                    criteria.append(criterion)
            chosen = select(*selected).select_from(joined).where(*criteria)
            return _reading(table.insert().from_select(columns, chosen), read)

        parameters = dict(values)
        for index, (relationship, _to_one, key) in enumerate(keyed):
            parameters.update(relationship.target_definition.id_key.bind(f"{_TARGET}{index}", key.key))
        statement = statements.get(request, ("plain-insert", table, names, tuple(r.name for r, _t, _k in keyed),
                                             read is not None), build, parameters)
        row = _run(request, session, statement, parameters).first()
        if row is None:
            return None
        size = len(table.columns)  # RETURNING's order, then what ``read`` reads
        return {column.key: value for column, value in zip(table.columns, row[:size], strict=True)}, \
            (tuple(row[size:]) if len(row) > size else None)

    def _persistent(self, session: Any, written: dict[str, Any]) -> Any:
        entity = self.mapper.class_manager.new_instance()
        keys = self.keys
        # loaded values (no history), as a load sets them
        inspect(entity).dict.update((keys[k], value) for k, value in written.items() if k in keys)
        if session is not None:  # else left transient: its values, for a caller that needs nothing more
            make_transient_to_detached(entity)  # what the database set is loaded on first use
            session.add(entity)
        return entity

    # -- update --------------------------------------------------------------------------------

    def update(self, request: Any, definition: Any, entity: Any, changes: Any) -> bool:
        """Update ``entity``'s row with ``changes``' attributes (relationships go the ORM's way):
        True when done (with no statement when nothing changes), False for the ORM's path."""
        if changes.relationships or not changes.attributes:
            return False
        session = request.dbsession
        state = inspect(entity)
        values = self._values(definition, changes.attributes)
        if (values is None or state.session is not session or not state.persistent or state.modified
                or not self._quiet(session.dispatch, "update")):
            return False
        loaded = state.dict
        changed: dict[str, Any] = {}
        for column_key, value in values.items():
            key = self.keys[column_key]
            if key not in loaded or not self.columns[key].type.compare_values(value, loaded[key]):
                changed[column_key] = value
        if not changed:
            return True  # the ORM's flush would write nothing either
        result = _run(request, session, self.update_statement, {**changed, _ID: state.identity[0]})
        if result.rowcount != 1 and request.dbconnection.dialect.supports_sane_rowcount:
            # as the ORM's flush says it (a concurrent writer deleted the row): retried, then 409
            raise StaleDataError(f"UPDATE statement on table '{self.table.name}' expected to update 1 row(s); "
                                 f"{result.rowcount} were matched.")
        self._flushed(session)
        written = result.last_updated_params()  # with the values of Python-side ``onupdate``s
        for column_key, value in written.items():
            attribute = self.keys.get(column_key)
            if attribute is not None:
                set_committed_value(entity, attribute, value)
        expired = [self.keys[key] for key in self.on_update if key in self.keys and key not in written]
        if expired:
            session.expire(entity, expired)  # the database's: loaded on use
        return True

    # -- shared --------------------------------------------------------------------------------

    def _values(self, definition: Any, attributes: dict[str, Any]) -> dict[str, Any] | None:
        """Column key -> value of the attributes sent, or None when one is not a plain column (or an
        ``apply`` hook, set since the start, wants the entity)."""
        if definition.apply is not None:
            return None
        values = {}
        columns = self.columns
        for name, value in attributes.items():
            column = columns.get(definition.entity_attribute(name))
            if column is None or not _quiet_listeners(self.class_attributes[column.key].dispatch.set):
                return None
            values[column.key] = value
        return values

    def _quiet(self, events: Any, kind: str) -> bool:
        """Nobody listens for what only the ORM's path does on an ``insert`` or an ``update``
        (the module's rule); ``events``: the session's (``connection.session_events``)."""
        mapper_events = self.mapper.dispatch
        if getattr(mapper_events, f"before_{kind}") or getattr(mapper_events, f"after_{kind}"):
            return False
        instance_events = self.mapper.class_manager.dispatch
        if instance_events.refresh_flush or (kind == "insert" and not _quiet_listeners(instance_events.init)):
            return False
        for name in _INSERT_EVENTS if kind == "insert" else _UPDATE_EVENTS:
            if getattr(events, name):
                return False
        return all(listener in FLUSH_LISTENERS for listener in events.after_flush)

    @staticmethod
    def _flushed(session: Any) -> None:
        """What a flush's ``after_flush`` listeners (only the library's) do: mark the transaction."""
        session.dispatch.after_flush(session, None)


def _run(request: Any, session: Any, statement: Any, parameters: dict[str, Any]) -> Any:
    """``statement`` on the request's connection, after the session's other pending changes (the
    same flush would have written them; ``connection.execute`` flushes them when autoflush is on)."""
    if session is not None and not session.autoflush:
        session.flush()
    return execute(request, statement, parameters)


def _reading(insert: Any, read: Any) -> Any:
    """``insert`` returning its row; with ``read``, in a ``WITH`` whose ``SELECT`` reads the row
    and ``read``'s columns (unless ``read.columns`` answers None)."""
    insert = insert.returning(*insert.table.columns)
    if read is None:
        return insert
    new = insert.cte("jsonapi_new")
    columns = read.columns(new)
    return insert if columns is None else select(*new.c, *columns)


def _quiet_listeners(listeners: Any) -> bool:
    # a loop, not all() over a generator (two calls more per collection): asked for every write, mostly of none
    for listener in listeners:  # noqa: SIM110
        if getattr(listener, "__module__", "") not in _SQLALCHEMY_LISTENERS:
            return False
    return True


def _in_session(session: Any, target: Any, key: Any) -> Any:
    """The instance of ``target``'s type with id ``key`` when the session holds it, else None."""
    mapper = inspect(target.model)
    return session.identity_map.get(mapper.identity_key_from_primary_key(list(target.id_key.parts(key))))


def _expire_loaded(session: Any, target: Any, keys: tuple[str, ...]) -> None:
    """Expire ``target``'s collections back to the new row when loaded (the ORM's backref would
    have appended the row to them; loaded again on use, they hold it)."""
    loaded = inspect(target).dict
    stale = [key for key in keys if key in loaded]
    if stale:
        session.expire(target, stale)
