"""What an export reads: the stage's sealed state at one ordinal, and which prims it keeps.

An export works on committed state only. :func:`read_state` first checks that the caller's
ordinal is the stage's current committed ordinal (its global write floor: everything at or
below it is sealed), then reads every column with ``OrdinalRange.latest(ordinal)`` — or, for a
change-based export, ``OrdinalRange.between(since_ordinal + 1, ordinal)``, which returns the
current value (or a tombstone) of each (prim, attribute) changed in that interval. Reads are
ordinary read ops: they take references to sealed buffers and never block writers.

The predicates of an export (:func:`prim_accepts`, :func:`property_accepts`) are evaluated on
that state: prim types and schemas come from the reserved names population wrote
(``usd-prim-type``, ``usd-schemas``, ``usd-ancestor-types``).

Columns are keyed by their public names: the stage reports the transform columns under their
storage names (``omni:fabric:localMatrix``, ...), and :meth:`_Reader._add` turns those back
into ``omni:xform`` / ``omni:resetXformStack`` through the engine's alias table
(``ovstage._aliases``), so the rest of export knows one name per column.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.ctypeslib  # numpy loads it lazily: at the first read otherwise

from .._aliases import public_name
from .._errors import ErrorCode, OvstageError
from .._pathdict import PathDictionary
from .._placement import Placement
from .._stage import OrdinalRange
from ..population._descs import PrimPredicateKind, PropertyPredicateKind
from ..population._mapping import RESET_XFORM_STACK, ColumnType
from ._rules import ExportOptions, ExportSelection

if TYPE_CHECKING:
    from .._stage import Stage

__all__ = [
    "PRIM_TYPE",
    "RESERVED",
    "SCHEMAS",
    "Column",
    "KnownOpinions",
    "StageState",
    "prim_accepts",
    "property_accepts",
    "read_state",
]

PRIM_TYPE = "usd-prim-type"
SCHEMAS = "usd-schemas"
ANCESTOR_TYPES = "usd-ancestor-types"
#: Reserved names population writes on every prim: never exported as attributes.
RESERVED = frozenset({PRIM_TYPE, SCHEMAS, ANCESTOR_TYPES, "usd-path", "usd-parent"})


@dataclass
class Column:
    """One attribute over the prims that have it (in a change read: that changed it).

    ``fixed``: rows aligned with ``paths`` (shape ``(n, *components)``) for a fixed column;
    ``rows``: one array per prim for an array column. ``deleted``: prims whose value was
    deleted in the interval (change reads only).
    """

    name: str
    ctype: ColumnType
    paths: list[str] = field(default_factory=list)
    fixed: np.ndarray | None = None
    rows: list[np.ndarray] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    _index: dict[str, int] | None = None

    def fixed_rows(self) -> np.ndarray:
        """``fixed``, for a column known to be a fixed one with rows."""
        if self.fixed is None:
            raise ValueError(f"column {self.name} has no fixed-size rows")
        return self.fixed

    def index(self) -> dict[str, int]:
        """Prim path -> row."""
        if self._index is None:
            self._index = {p: i for i, p in enumerate(self.paths)}
        return self._index


class Resolver:
    """Token and path ids of the stage's dictionary back to strings, each id asked once."""

    def __init__(self, dictionary: PathDictionary) -> None:
        self.dictionary = dictionary
        self._tokens: dict[int, str] = {0: ""}
        self._paths: dict[int, str] = {}

    def token(self, token: int) -> str:
        text = self._tokens.get(token)
        if text is None:
            text = self._tokens[token] = self.dictionary.token_to_string(token)
        return text

    def tokens(self, ids: np.ndarray) -> list[str]:
        """Strings of an array of ids (0 is the empty string), one lookup per distinct id."""
        flat = np.asarray(ids, dtype=np.uint64).reshape(-1)
        if flat.size <= 16:
            return [self.token(int(i)) for i in flat]
        unique, inverse = np.unique(flat, return_inverse=True)
        texts = np.array([self.token(int(u)) for u in unique], dtype=object)
        return list(texts[inverse.reshape(-1)])

    def path_ids(self) -> dict[str, int]:
        """Path -> id of every path resolved so far."""
        return {path: path_id for path_id, path in self._paths.items()}

    def paths(self, ids: list[int]) -> list[str]:
        """Strings of path ids, the new ones in one batch."""
        known = self._paths
        new = [i for i in dict.fromkeys(ids) if i not in known]
        if new:
            # the dictionary's batch form (ours, kept off its public API)
            strings = self.dictionary._path_strings(new)
            known.update(zip(new, strings, strict=True))
        return [known[i] for i in ids]

    def path(self, path_id: int) -> str:
        text = self._paths.get(path_id)
        if text is None:
            text = self._paths[path_id] = self.dictionary.path_to_string(path_id)
        return text


@dataclass
class StageState:
    """The columns an export looks at, read at ``ordinal``."""

    ordinal: int
    prims: list[str]
    columns: dict[str, Column]
    resolver: Resolver
    #: In a change read: the reserved columns at ``ordinal`` (for predicates), and the prims
    #: deleted in the interval.
    reserved: dict[str, Column] = field(default_factory=dict)
    deleted_prims: list[str] = field(default_factory=list)
    changes_only: bool = False
    #: Public names of the attributes whose state at the ordinal could not be read (skipped).
    unavailable: set[str] = field(default_factory=set)
    _prim_info: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = field(
        default_factory=dict
    )
    _names: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=dict)
    _kinds: dict[str, tuple[str, tuple[str, ...]]] | None = None

    def reserved_column(self, name: str) -> Column | None:
        return self.reserved.get(name) or self.columns.get(name)

    def names_of(self, name: str, path: str) -> tuple[str, ...]:
        """A token-array (or token) reserved column of one prim as strings."""
        return self._by_path(name).get(path, ())

    def _by_path(self, name: str) -> dict[str, tuple[str, ...]]:
        by_path = self._names.get(name)
        if by_path is None:
            by_path = self._names[name] = self._resolve_names(name)
        return by_path

    def kinds(self) -> dict[str, tuple[str, tuple[str, ...]]]:
        """Prim -> ``(type name, applied schemas)`` of every prim of the state, made once."""
        if self._kinds is None:
            types, schemas = self._by_path(PRIM_TYPE), self._by_path(SCHEMAS)
            self._kinds = {
                p: ((types.get(p) or ("",))[0], schemas.get(p, ())) for p in self.prims
            }
        return self._kinds

    def _resolve_names(self, name: str) -> dict[str, tuple[str, ...]]:
        """Path -> strings of a reserved token(-array) column, for all its prims at once (a
        token column in one vectorised lookup: every prim of a stage asks for its type)."""
        column = self.reserved_column(name)
        if column is None or not column.paths:
            return {}
        tokens = self.resolver.tokens
        if column.ctype.is_array:
            values = [tuple(t for t in tokens(r) if t) for r in column.rows]
        else:
            fixed = column.fixed_rows()
            if fixed.ndim == 1 or fixed.shape[1] == 1:
                values = [(t,) if t else () for t in tokens(fixed)]
            else:
                values = [tuple(t for t in tokens(r) if t) for r in fixed]
        return dict(zip(column.paths, values, strict=True))

    def info(self, path: str) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
        """``(type name, applied schemas, ancestor types)`` of a prim."""
        found = self._prim_info.get(path)
        if found is None:
            types = self.names_of(PRIM_TYPE, path)
            found = (
                types[0] if types else "",
                self.names_of(SCHEMAS, path),
                self.names_of(ANCESTOR_TYPES, path),
            )
            self._prim_info[path] = found
        return found


def current_ordinal(stage: Stage) -> int:
    """The stage's current committed ordinal: its global write floor."""
    with stage.get_attribute_write_floor(None) as query:
        return int(query.fetch())


def check_ordinals(stage: Stage, options: ExportOptions) -> None:
    """INVALID_ARGUMENT unless ``options.ordinal`` is the current committed ordinal (and, for
    a change export, ``since_ordinal`` is not above it)."""
    current = current_ordinal(stage)
    if options.ordinal != current:
        raise OvstageError(
            ErrorCode.INVALID_ARGUMENT,
            f"ordinal {options.ordinal}: USD export requires desc.ordinal to equal the current "
            f"committed ovstage ordinal ({current})",
        )
    if (
        options.selection == ExportSelection.CHANGED_PROPERTIES_SINCE_ORDINAL
        and options.since_ordinal > options.ordinal
    ):
        raise OvstageError(
            ErrorCode.INVALID_ARGUMENT,
            f"since_ordinal {options.since_ordinal} is above ordinal {options.ordinal}",
        )


def _indices(pointer: Any, count: int) -> np.ndarray | None:
    if not pointer:
        return None
    return np.ctypeslib.as_array(ctypes.cast(pointer, ctypes.POINTER(ctypes.c_uint32)), (count,))


def _column_type(group: Any) -> ColumnType:
    tensor = group.tensor(0)
    dtype = tensor.dtype
    width = int(np.prod(tensor.shape_tuple[1:], dtype=np.int64)) * int(dtype.lanes)
    return ColumnType(int(dtype.code), int(dtype.bits), width, bool(group.is_array), group.semantic)


_HOST = Placement(device_type=1)  # kDLCPU

#: Read failures that mean "the source state at this ordinal is not there" (docs/export.md,
#: "Unavailable source states"): an export skips and counts such an attribute.
_UNAVAILABLE = frozenset({ErrorCode.OUT_OF_RANGE, ErrorCode.WRITE_FLOOR_VIOLATION})


class _Reader:
    """Reads of one export. Each path list's ids are fetched once (one native call); only the
    paths a group selects are turned into strings, each id once."""

    def __init__(self, stage: Stage, resolver: Resolver) -> None:
        self.stage = stage
        self.resolver = resolver
        self._lists: dict[int, list[int]] = {}
        #: (list handle, offset, count) -> the paths of a contiguous selection: the columns
        #: of one read mostly select the same rows, resolved once.
        self._spans: dict[tuple[int, int, int], list[str]] = {}
        #: The path ids of the first query read (the stage's own prims), once a group showed
        #: them.
        self.query_prims: set[int] | None = None
        #: Public names of the attributes whose state at the ordinal could not be read.
        self.unavailable: set[str] = set()

    def _paths(self, group: Any) -> list[str]:
        handle = group.prim_list
        ids = self._lists.get(handle)
        if ids is None:
            ids = self._lists[handle] = self.resolver.dictionary.get_paths(handle)
            if self.query_prims is None:
                self.query_prims = set(ids)
        raw = group.raw.prims
        local = _indices(raw.index_map, raw.count)
        if local is not None:
            return self.resolver.paths([ids[i] for i in local.tolist()])
        key = (handle, raw.offset, raw.count)
        span = self._spans.get(key)
        if span is None:
            span = self._spans[key] = self.resolver.paths(ids[raw.offset : raw.offset + raw.count])
        return span

    def read(self, query: Any, names: list[str], ordinal_range: OrdinalRange) -> dict[str, Column]:
        columns: dict[str, Column] = {}
        if not names:
            return columns
        try:
            self._read_into(columns, query, names, ordinal_range)
        except OvstageError as exc:
            if exc.code not in _UNAVAILABLE:
                raise OvstageError(
                    exc.code,
                    f"the source state at ordinal {ordinal_range.end_ordinal} could not be "
                    f"read: {exc.message}",
                ) from None
            # One attribute's state at the ordinal is gone (a read fails as a whole): read
            # each on its own, and skip and count the ones that fail so.
            columns.clear()
            for name in names:
                try:
                    self._read_into(columns, query, [name], ordinal_range)
                except OvstageError as single:
                    if single.code not in _UNAVAILABLE:
                        raise
                    self.unavailable.add(public_name(name))
        return columns

    def _read_into(
        self, columns: dict[str, Column], query: Any, names: list[str], ordinal_range: OrdinalRange
    ) -> None:
        # Groups on the host: a GPU column is copied there for the read (USD authoring needs
        # host memory); a host column is served as is.
        with self.stage.read_attributes(query, names, ordinal_range, placement=_HOST) as read:
            read.wait()
            for group in read.groups():
                with group:
                    self._add(columns, group)

    def _add(self, columns: dict[str, Column], group: Any) -> None:
        name = public_name(self.resolver.token(group.attribute))
        paths = self._paths(group)
        if group.is_delete:
            column = columns.get(name)
            if column is None:
                column = columns[name] = Column(name, ColumnType(0, 0, 0, False))
            column.deleted.extend(paths)
            return
        ctype = _column_type(group)
        data = group.raw.data
        rows = _indices(data.index_map, data.count)
        column = columns.get(name)
        if column is None or (column.ctype.bits == 0 and not column.paths):
            deleted = column.deleted if column is not None else []
            column = columns[name] = Column(name, ctype, deleted=deleted)
        if ctype.is_array:
            order = range(len(paths)) if rows is None else rows.tolist()
            column.rows.extend(group.array(i) for i in order)
        else:
            values = group.array(0)
            picked = values[: len(paths)] if rows is None else values[rows]
            column.fixed = (
                np.array(picked)
                if column.fixed is None
                else np.concatenate([column.fixed, np.array(picked)])
            )
        column.paths.extend(paths)
        column._index = None


def read_state(
    stage: Stage, options: ExportOptions, known: KnownOpinions | None = None
) -> StageState:
    """The state an export looks at (see the module documentation).

    ``known``: what the destination already has opinions on; a change export also reads the
    names only it has (an attribute deleted from every prim is no longer among the stage's
    attributes) and checks its prims that are no longer on the stage for deletions.
    """
    check_ordinals(stage, options)
    dictionary = PathDictionary(stage)
    resolver = Resolver(dictionary)
    reader = _Reader(stage, resolver)
    query = stage.query()
    try:
        result = stage.fetch_query_result(query)
        names = sorted({resolver.token(a) for a in result.attributes})
        ordinal = options.ordinal
        if options.selection != ExportSelection.CHANGED_PROPERTIES_SINCE_ORDINAL:
            columns = reader.read(query, names, OrdinalRange.latest(ordinal))
            prims = sorted({p for c in columns.values() for p in c.paths})
            return StageState(ordinal, prims, columns, resolver, unavailable=reader.unavailable)
        changed: dict[str, Column] = {}
        deleted: list[str] = []
        if options.since_ordinal < ordinal:
            between = OrdinalRange.between(options.since_ordinal + 1, ordinal)
            changed = reader.read(query, names, between)
            if known is not None:
                deleted = _deletions(stage, reader, changed, known, names, between)
        prims = sorted({p for c in changed.values() for p in c.paths})
        # The reserved names (types, schemas) the predicates need, and the reset of the
        # transform stack a changed transform is written with, of the changed prims only.
        reserved_names = [n for n in names if n in RESERVED or public_name(n) in _AT_ORDINAL]
        reserved = _read_on(stage, reader, prims, reserved_names, OrdinalRange.latest(ordinal))
        return StageState(
            ordinal, prims, changed, resolver, reserved, deleted, True, reader.unavailable
        )
    finally:
        stage.release_query(query).wait()


def _deletions(
    stage: Stage,
    reader: _Reader,
    changed: dict[str, Column],
    known: KnownOpinions,
    names: list[str],
    between: OrdinalRange,
) -> list[str]:
    """Tombstones a read over the stage's own prims cannot show: prims the destination knows
    that are gone from the stage, and names the destination has that no prim has any more.
    They are added to ``changed``; the deleted prims are returned.

    The stage's prims are the path list of the query the reads above ran over (every group
    points at it); only when no group came back are all known prims checked."""
    if not known.prims:
        return []
    by_id = known.ids(reader.resolver.dictionary)
    present_ids = reader.query_prims
    if present_ids is None:
        gone = sorted(known.prims)
    else:
        gone = sorted(by_id[i] for i in by_id.keys() - present_ids)
    vanished = known.names - set(names) - _DERIVED_NAMES
    found: dict[str, set[str]] = {}
    if gone:
        found = _tombstones(stage, reader, gone, sorted(set(names) | vanished | RESERVED), between)
    if vanished:
        kept = sorted(known.prims - set(gone))
        for name, paths in _tombstones(stage, reader, kept, sorted(vanished), between).items():
            found.setdefault(name, set()).update(paths)
    for name, paths in found.items():
        column = changed.setdefault(name, Column(name, ColumnType(0, 0, 0, False)))
        column.deleted = sorted(set(column.deleted) | paths)
    gone_set = set(gone)
    return sorted({p for paths in found.values() for p in paths if p in gone_set})


class KnownOpinions:
    """The prims and property names a destination layer has opinions on (what a change
    export checks for deletions), with the prims' path ids, interned once per prim.
    A destination keeps one up to date as it writes instead of walking its layer."""

    def __init__(self, prims: Iterable[str] = (), names: Iterable[str] = ()) -> None:
        self.prims: set[str] = set(prims)
        self.names: set[str] = set(names)
        self._ids: dict[int, str] = {}
        self._interned: set[str] = set()

    @classmethod
    def of_layer(cls, layer: Any) -> KnownOpinions:
        """What an ``Sdf.Layer`` holds (walks every prim spec)."""
        known = cls()
        stack = list(layer.rootPrims)
        while stack:
            spec = stack.pop()
            known.prims.add(str(spec.path))
            known.names.update(spec.properties.keys())
            stack.extend(spec.nameChildren)
        return known

    def forget(self, roots: Iterable[str]) -> None:
        """Drop prims (and their descendants) removed from the layer."""
        for root in roots:
            gone = {p for p in self.prims if p == root or p.startswith(root + "/")}
            self.prims -= gone
            self._interned -= gone
            self._ids = {i: p for i, p in self._ids.items() if p not in gone}

    def add(self, prims: Iterable[str], ids: dict[str, int]) -> None:
        """Record ``prims`` as written, with the path ids already known for them."""
        for path in prims:
            self.prims.add(path)
            path_id = ids.get(path)
            if path_id is not None and path not in self._interned:
                self._ids[path_id] = path
                self._interned.add(path)

    def ids(self, dictionary: PathDictionary) -> dict[int, str]:
        """Path id -> path of every known prim (new prims interned in one native call)."""
        new = sorted(self.prims - self._interned)
        if new:
            with dictionary.create_path_list_from_strings(new) as path_list:
                self._ids.update(zip(dictionary.get_paths(path_list), new, strict=True))
            self._interned.update(new)
        return self._ids


#: Columns a change export reads at the ordinal on the changed prims besides the reserved
#: names (their value may be older than the interval).
_AT_ORDINAL = frozenset({RESET_XFORM_STACK})

#: Names export writes itself (from omni:xform): never stage columns.
_DERIVED_NAMES = frozenset({"xformOp:transform", "xformOpOrder"})


def _tombstones(
    stage: Stage, reader: _Reader, paths: list[str], names: list[str], between: OrdinalRange
) -> dict[str, set[str]]:
    """name -> the prims of ``paths`` whose ``name`` was deleted in the interval (a read over
    the stage's own prims misses a name no prim has any more, and deleted prims)."""
    columns = _read_on(stage, reader, paths, names, between)
    return {name: set(c.deleted) for name, c in columns.items() if c.deleted}


def _read_on(
    stage: Stage, reader: _Reader, paths: list[str], names: list[str], ordinals: OrdinalRange
) -> dict[str, Column]:
    """A read of ``names`` over the prims ``paths`` only."""
    if not paths or not names:
        return {}
    path_list = reader.resolver.dictionary.create_path_list_from_strings(paths)
    query = stage.query_from_path_list(path_list)
    try:
        return reader.read(query, names, ordinals)
    finally:
        stage.release_query(query).wait()
        path_list.release()


# -- predicates --------------------------------------------------------------------------

#: The predicate kinds export evaluates: those it can answer from the stored state.
_PRIM_SUPPORTED = frozenset(PrimPredicateKind) - {
    PrimPredicateKind.HAS_PARENT,
    PrimPredicateKind.HAS_ANCESTOR,
    PrimPredicateKind.HAS_PROPERTY,
    PrimPredicateKind.HAS_KIND,
    PrimPredicateKind.HAS_PURPOSE,
    PrimPredicateKind.HAS_METADATA,
}
_PROPERTY_SUPPORTED = frozenset(PropertyPredicateKind) - {
    PropertyPredicateKind.HAS_METADATA,
    PropertyPredicateKind.IS_CUSTOM,
    PropertyPredicateKind.IS_AUTHORED,
}


def check_predicates(prim: Any, prop: Any) -> None:
    """NOT_SUPPORTED when a predicate tree holds a kind export does not evaluate."""
    for tree, supported, what in (
        (prim, _PRIM_SUPPORTED, "prim_predicate"),
        (prop, _PROPERTY_SUPPORTED, "property_predicate"),
    ):
        stack = [tree]
        while stack:
            node = stack.pop()
            if node.kind not in supported:
                raise OvstageError(
                    ErrorCode.NOT_SUPPORTED,
                    f"{what}: kind {node.kind.name} is not supported by USD export",
                )
            stack.extend(node.subpredicates or ())


def _under(path: str, root: str) -> bool:
    return root == "/" or path == root or path.startswith(root + "/")


def prim_accepts(node: Any, state: StageState, path: str) -> bool:
    """Whether the prim predicate ``node`` accepts prim ``path``."""
    kind = node.kind
    if kind == PrimPredicateKind.ALL:
        return True
    if kind == PrimPredicateKind.NONE:
        return False
    if kind == PrimPredicateKind.AND:
        return all(prim_accepts(n, state, path) for n in node.subpredicates)
    if kind == PrimPredicateKind.OR:
        return any(prim_accepts(n, state, path) for n in node.subpredicates)
    if kind == PrimPredicateKind.NOT:
        return not prim_accepts(node.subpredicates[0], state, path)
    if kind == PrimPredicateKind.HAS_PATH:
        return path in node.strings
    if kind == PrimPredicateKind.IS_UNDER_PATH:
        return any(_under(path, root) for root in node.strings)
    type_name, schemas, ancestors = state.info(path)
    if kind == PrimPredicateKind.HAS_TYPE:
        return type_name in node.strings
    if kind == PrimPredicateKind.IS_A_TYPE:
        return type_name in node.strings or any(a in node.strings for a in ancestors)
    if kind == PrimPredicateKind.HAS_APPLIED_SCHEMA:
        return any(s in node.strings for s in schemas)
    if kind == PrimPredicateKind.HAS_SCHEMA:
        names = {type_name, *schemas, *ancestors}
        return any(s in names for s in node.strings)
    # HAS_APPLIED_SCHEMA_IN_NAMESPACE: a family such as "CollectionAPI" for "CollectionAPI:x"
    return any(s.split(":", 1)[0] in node.strings for s in schemas)


def property_accepts(
    node: Any, name: str, is_relationship: bool, declared_by: Callable[[Any], frozenset[str]]
) -> bool:
    """Whether the property predicate ``node`` accepts property ``name``; ``declared_by(names)``
    gives the property names the schemas ``names`` declare."""
    kind = node.kind
    if kind == PropertyPredicateKind.ALL:
        return True
    if kind == PropertyPredicateKind.NONE:
        return False
    if kind == PropertyPredicateKind.AND:
        return all(
            property_accepts(n, name, is_relationship, declared_by) for n in node.subpredicates
        )
    if kind == PropertyPredicateKind.OR:
        return any(
            property_accepts(n, name, is_relationship, declared_by) for n in node.subpredicates
        )
    if kind == PropertyPredicateKind.NOT:
        return not property_accepts(node.subpredicates[0], name, is_relationship, declared_by)
    if kind == PropertyPredicateKind.HAS_NAME:
        return name in node.strings
    if kind == PropertyPredicateKind.IN_NAMESPACE:
        return any(name.startswith(ns + ":") for ns in node.strings)
    if kind == PropertyPredicateKind.IS_ATTRIBUTE:
        return not is_relationship
    if kind == PropertyPredicateKind.IS_RELATIONSHIP:
        return is_relationship
    return name in declared_by(node.strings)  # DECLARED_BY_SCHEMA
